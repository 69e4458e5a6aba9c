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
