"""A method torch.Tensor does not have proves its receiver is no tensor (issue 38, "what a
value is"): `image.tobytes()` of a diffusers pipeline's output image, `.hexdigest()` of a hash,
are Python objects, however device-like the value they were taken from. Their results are
device values only when made of device arguments (as an opaque function's are), when the
method is one of a distribution's (knowledge/torch.TENSOR_OBJECT_METHODS). Standard-library modules that build Python objects (hashlib, pickle,
struct) never make a device tensor of what they are given. Each case in several syntaxes,
with the near-misses that must stay reported."""

from __future__ import annotations

import textwrap

import pytest

from torchsync_lint.engine import lint_source

CODES = {"TSL101", "TSL102", "TSL103"}


def found(src: str) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint_source(textwrap.dedent(src), "case.py", set(CODES), {})}


def line_of(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


LOOP = textwrap.dedent("""\
    import hashlib
    import pickle
    import struct
    import operator
    import torch
    from torch.distributions import Categorical

    model = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(list(range(8)), num_workers=2, pin_memory=True)
    for batch in loader:
        out = model(batch.cuda(non_blocking=True))
        {body}
        out.sum().backward()
        opt.step()
""")


def loop(body: str) -> str:
    return LOOP.format(body=textwrap.indent(textwrap.dedent(body), "    ").strip())


@pytest.mark.parametrize(
    "body",
    [
        # the diffusers pattern: bytes of each output "image", hashed, formatted into a name
        """\
        for i, image in enumerate(out):
            name = f"{i}-{hashlib.sha1(image.tobytes()).hexdigest()}.jpg"
        """,
        # the same through names
        """\
        data = out.tobytes()
        digest = hashlib.sha1(data).hexdigest()
        print(f"{digest}")
        """,
        # a method chain on an attribute of the output
        """\
        text = out.images.to_text().upper()
        print(f"{text}")
        """,
        # a standard-library call of the device value itself
        """\
        packed = pickle.dumps(out)
        print(f"{packed}")
        """,
        """\
        if struct.pack("f", 1.0):
            pass
        """,
    ],
    ids=["tobytes-hash-fstring", "names", "attribute-chain", "pickle", "struct"],
)
def test_a_non_tensor_method_or_a_stdlib_object_is_not_a_device_tensor(body):
    assert found(loop(body)) == set()


@pytest.mark.parametrize(
    "body, marker, code",
    [
        # tensor methods keep the value a device tensor
        ("m = out.mean()\nprint(f\"{m}\")", "print(f", "TSL103"),
        ("m = out.abs().sum(dim=0).max()\nif m > 1:\n    pass", "if m > 1", "TSL102"),
        # a distribution's methods: device tensors of a distribution over device logits
        ("dist = Categorical(logits=out)\nentropy = dist.entropy().mean()\nprint(f\"{entropy}\")", "print(f", "TSL103"),
        ("dist = Categorical(logits=out)\na = dist.sample()\nv = a.item()", "a.item()", "TSL101"),
        # a method that is not a tensor's, given a device argument: an opaque function of it
        ("score = out.images.score(out)\nif score > 0:\n    pass", "if score > 0", "TSL102"),
        # operator passes values through
        ("s = operator.add(out, out)\nprint(f\"{s}\")", "print(f", "TSL103"),
    ],
    ids=["tensor-method", "tensor-chain", "distribution-entropy", "distribution-sample", "device-argument", "operator"],
)
def test_tensor_methods_and_device_objects_stay_device_values(body, marker, code):
    src = loop(body)
    assert (line_of(src, marker), code) in found(src)


def test_a_namedtuple_of_device_losses_read_as_a_dict_is_still_read():
    src = """\
        from collections import namedtuple

        import torch

        Losses = namedtuple("Losses", ["a", "b"])
        model = torch.nn.Linear(4, 4).cuda()
        loader = torch.utils.data.DataLoader(list(range(8)), num_workers=2, pin_memory=True)
        for x in loader:
            out = model(x.cuda(non_blocking=True))
            losses = Losses(out.sum(), out.mean())
            logged = {k: v.item() for k, v in losses._asdict().items()}
            losses.a.backward()
        """
    assert (line_of(src, "v.item()"), "TSL101") in found(src)


# -- a type test that holds only of host data -----------------------------------------------------
HELPER = """\
    import numpy as np
    import pandas as pd
    import torch


    def tonumpy(data):
        if {test}:
            return data
        if isinstance(data, torch.Tensor):
            return data.detach().cpu().numpy()
    """

STEP = """\
    model = torch.nn.Linear(4, 4).cuda()
    loader = torch.utils.data.DataLoader(list(range(8)), num_workers=2, pin_memory=True)
    for x in loader:
        score = model(x.cuda(non_blocking=True))
        label = score.argmax(1)
        picked = tonumpy(score)[tonumpy(label) > -1]
        score.sum().backward()
    """


@pytest.mark.parametrize(
    "test",
    ["isinstance(data, np.ndarray)", "isinstance(data, (np.ndarray, float))", "isinstance(data, pd.DataFrame)", "not isinstance(data, torch.Tensor)"],
    ids=["numpy", "numpy-or-float", "pandas", "not-a-tensor"],
)
def test_a_parameter_returned_where_a_host_type_test_holds_is_host_data(test):
    src = textwrap.dedent(HELPER.format(test=test)) + "\n\n" + textwrap.dedent(STEP)
    got = found(src) | {(f.line, f.code) for f in lint_source(src, "case.py", {"TSL105"}, {})}
    assert (line_of(src, "picked = "), "TSL105") not in got
    assert (line_of(src, "data.detach().cpu()"), "TSL101") in got  # the tensor branch still reads


@pytest.mark.parametrize("test", ["isinstance(data, list)", "data is None", "isinstance(data, MyArray)"], ids=["list", "none-test", "unknown-class"])
def test_other_type_tests_leave_the_tensor_passed_through(test):
    src = textwrap.dedent(HELPER.format(test=test)) + "\nfrom mylib import MyArray\n\n" + textwrap.dedent(STEP)
    got = {(f.line, f.code) for f in lint_source(src, "case.py", {"TSL105"}, {})}
    assert (line_of(src, "picked = "), "TSL105") in got


def test_the_helper_in_another_module_answers_the_same(tmp_path, capsys):
    from tests.test_objects import project

    files = {
        "array_tool.py": HELPER.format(test="isinstance(data, np.ndarray)"),
        "train.py": "import torch\nfrom array_tool import tonumpy\n\n" + textwrap.dedent(STEP),
    }
    got = project(tmp_path, files, capsys, select="TSL101,TSL105")
    assert ("array_tool.py", 10, "TSL101") in got
    assert not [k for k in got if k[0] == "train.py"]
    files["array_tool.py"] = HELPER.format(test="isinstance(data, list)")
    got = project(tmp_path / "near", files, capsys, select="TSL101,TSL105")
    assert ("train.py", 9, "TSL105") in got


# -- `kwargs["key"]` of a `def f(**kwargs)`: what the call sites pass for that keyword ----------
KWARGS = """\
    import torch


    class Pipe:
        def __init__(self):
            self.unet = torch.nn.Linear(4, 4).cuda()

        def adapt(self, mask, **kwargs):
            if mask.shape[0] < kwargs["batch_size"] * kwargs["n"]:
                mask = mask.repeat(2, 1)
            if kwargs["flag"]:
                mask = mask * 2
            if kwargs["emb"].sum() > 0:
                mask = mask + 1
            return mask

        def __call__(self, x, batch_size, n):
            emb = self.unet(x)
            for i in range(10):
                emb = self.unet(emb)
                {call}
    """


@pytest.mark.parametrize(
    "call",
    [
        "self.adapt(emb, batch_size=batch_size, n=n, flag=n > 1, emb=emb)",
        'self.adapt(emb, **{"batch_size": batch_size, "n": n, "flag": n > 1, "emb": emb})',
        "self.adapt(emb, **dict(batch_size=batch_size, n=n, flag=n > 1, emb=emb))",
        "kw = dict(batch_size=batch_size, n=n, flag=n > 1, emb=emb)\n                self.adapt(emb, **kw)",
    ],
    ids=["keywords", "dict-display", "dict-call", "named-dict"],
)
def test_a_kwargs_entry_is_what_the_callers_pass_under_its_key(call):
    src = KWARGS.format(call=call)
    got = found(src)
    assert (line_of(src, 'kwargs["emb"].sum()'), "TSL102") in got  # the device value passed under "emb"
    assert (line_of(src, 'mask.shape[0] <'), "TSL102") not in got  # host numbers under the others
    assert (line_of(src, 'if kwargs["flag"]'), "TSL102") not in got


def test_a_kwargs_entry_is_unknown_when_a_caller_hides_its_keys():
    src = KWARGS.format(call="self.adapt(emb, **options(emb))")
    assert found(src) == set()  # what `options` puts under each key is not known: silent
    both = KWARGS.format(call="self.adapt(emb, batch_size=batch_size, n=n, flag=n > 1, emb=emb)\n                self.adapt(emb, **options(emb))")
    assert (line_of(both, 'if kwargs["flag"]'), "TSL102") not in found(both)


# -- torch functions whose annotations say they make no tensor (knowledge/torch_returns.py) -------
@pytest.mark.parametrize(
    "expr, expected",
    [
        ("torch.finfo(out.dtype).min", "HOST"),
        ("torch.iinfo(torch.int64).max", "HOST"),
        ("torch.result_type(out, out)", "HOST"),
        ("torch.equal(out, out)", "HOST"),
        ("torch.promote_types(out.dtype, torch.float16)", "HOST"),
        # near-misses: torch functions that do make tensors where their operands are
        ("torch.maximum(out, out)", "DEVICE"),
        ("torch.where(out > 0, out, out)", "DEVICE"),
        ("torch.compile(model)", "MODEL"),
    ],
)
def test_torch_functions_by_their_return_annotations(expr, expected):
    from tests.test_analysis import kind_of_last

    src = f"import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nout = model(torch.ones(4, device='cuda'))\nv = {expr}\nprobe(v)\n"
    assert kind_of_last(src, "v").name == expected


def test_the_generated_torch_table_is_what_the_installed_torch_says():
    import subprocess
    import sys
    from pathlib import Path

    from torchsync_lint.knowledge import torch_returns

    torch_version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, check=True).stdout.strip()
    if torch_version != torch_returns.TORCH_VERSION:
        pytest.skip(f"the table was generated from torch {torch_returns.TORCH_VERSION}, this is {torch_version}")
    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_torch_returns.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"finfo", "iinfo", "result_type", "equal"} <= torch_returns.NEVER_TENSOR
    assert not {"maximum", "where", "split_copy", "cat", "tensor"} & torch_returns.NEVER_TENSOR


# -- legacy `Variable(t)`: the tensor it wraps, where it is ----------------------------------------
@pytest.mark.parametrize(
    "wrap, expected",
    [
        ("Variable(out)", "DEVICE"),
        ("Variable(out, requires_grad=False)", "DEVICE"),
        ("torch.autograd.Variable(out)", "DEVICE"),
        ("Variable(torch.zeros(3))", "HOST_TENSOR"),  # a host tensor stays one (it was an opaque object)
        ("Variable(torch.LongTensor(3, 4))", "HOST_TENSOR"),
    ],
)
def test_a_variable_is_the_tensor_it_wraps(wrap, expected):
    from tests.test_analysis import kind_of_last

    src = f"import torch\nfrom torch.autograd import Variable\nmodel = torch.nn.Linear(4, 4).cuda()\nout = model(torch.ones(4, device='cuda'))\nv = {wrap}\nprobe(v)\n"
    assert kind_of_last(src, "v").name == expected


# -- a default device that is an accelerator (`torch.set_default_device`) ---------------------------
DEFAULT = textwrap.dedent("""\
    import numpy as np
    import torch

    {default}
    model = torch.nn.Linear(4, 4).cuda()
    for step in range(100):
        x = torch.randn(8, 4)
        loc = torch.zeros(8, 4)
        loc = loc.cuda()
        frame = torch.from_numpy(np.ones((8, 4), dtype=np.float32))
        frame = frame.cuda()
        out = model(x)
        shown = torch.ones((1, 3)).cpu()
        out.sum().backward()
""")


@pytest.mark.parametrize(
    "default",
    [
        'torch.set_default_device("cuda")',
        'torch.set_default_device(torch.device("cuda:0"))',
        'torch.set_default_tensor_type("torch.cuda.FloatTensor")',
        "torch.set_default_tensor_type(torch.cuda.FloatTensor)",
        'if torch.cuda.is_available():\n    torch.set_default_tensor_type("torch.cuda.FloatTensor")',
    ],
    ids=["device-str", "device-call", "tensor-type-str", "tensor-type-attr", "conditional"],
)
def test_factories_fill_an_accelerator_that_is_the_default_device(default):
    src = DEFAULT.format(default=default)
    got = {(f.line, f.code) for f in lint_source(src, "case.py", {"TSL101", "TSL301", "TSL305"}, {})}
    assert (line_of(src, "loc = loc.cuda()"), "TSL305") not in got  # already on the device: no host build
    assert (line_of(src, "torch.ones((1, 3)).cpu()"), "TSL101") in got  # a device tensor read back
    assert any(line == line_of(src, "frame = frame.cuda()") for line, _ in got)  # from_numpy is on the host still


def test_a_cpu_default_device_changes_nothing():
    src = DEFAULT.format(default='torch.set_default_device("cpu")')
    got = {(f.line, f.code) for f in lint_source(src, "case.py", {"TSL101", "TSL301", "TSL305"}, {})}
    assert (line_of(src, "loc = loc.cuda()"), "TSL305") in got
    assert (line_of(src, "torch.ones((1, 3)).cpu()"), "TSL101") not in got
