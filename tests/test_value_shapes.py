"""What a value is, not only where it lives (issue 38): a container of device tensors is no
tensor, a module is no tensor, a branch that runs a bounded number of times is not per step, a
Python float is host data, and a tensor built on the host and copied is one hazard (TSL305).
Each class in several syntaxes (assignments, attributes on `self`, unpacking, a helper, a
Lightning `training_step`, another module), each with near-misses that must stay reported."""

from __future__ import annotations

import textwrap

import pytest

from torchsync_lint.engine import lint_source
from tests.test_objects import project

CODES = {"TSL101", "TSL102", "TSL103", "TSL301", "TSL305"}


def found(src: str, codes=CODES) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint_source(textwrap.dedent(src), "case.py", set(codes), {})}


def messages(src: str, codes=CODES) -> dict[int, str]:
    return {f.line: f.message for f in lint_source(textwrap.dedent(src), "case.py", set(codes), {})}


def line_of(src: str, text: str) -> int:
    lines = textwrap.dedent(src).splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


# -- 1. containers ------------------------------------------------------------------------------
LOOP = textwrap.dedent("""\
    import torch


    def train(model, loader, opt, device):
        for batch in loader:
            batch = {{k: v.to(device, non_blocking=True) for k, v in batch.items()}}
            outputs = model(**batch)
            {body}
            loss = outputs["loss"]
            loss.backward()
            opt.step()
""")

# a model's (dict-like) output: shape shown by use, not by the forward
OUTPUTS = textwrap.dedent("""\
    import torch


    def train(model, loader, opt, device):
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            outputs = model(x)
            {body}
            loss = outputs["loss"]
            loss.backward()
            opt.step()
""")

LIGHTNING = textwrap.dedent("""\
    import lightning as L


    class Lit(L.LightningModule):
        def training_step(self, batch, batch_idx):
            outputs = self.net(batch["x"])
            {body}
            return outputs["loss"]
""")

CALLBACK = textwrap.dedent("""\
    import lightning as L


    class Logger(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            {body}
""")

CONTAINER_VALID = [
    (LOOP, 'if "mask" in batch:\n            pass'),
    (LOOP, 'if "logits" in outputs:\n            pass'),
    (LOOP, "if len(batch) > 2:\n            pass"),
    (LOOP, 'for key in ("mask", "ids"):\n            if key in outputs:\n                pass'),
    (LOOP, 'key = "mask"\n        if key not in batch:\n            continue'),
    (LOOP, "for k in batch.keys():\n            pass"),
    (LOOP, "if batch:\n            pass"),
    (LOOP, "if not batch:\n            continue"),
    (OUTPUTS, 'if "logits" in outputs:\n            pass'),
    (OUTPUTS, "if outputs:\n            pass"),
    (LIGHTNING, 'if "mask" in batch:\n            pass'),
    (LIGHTNING, 'assert "loss" in outputs'),
    (CALLBACK, 'if "loss" in outputs:\n            pass'),
    (CALLBACK, 'if "mask" not in batch:\n            return'),
]
CONTAINER_INVALID = [
    (LOOP, 'if batch["mask"].any():\n            pass', "TSL102"),
    (LOOP, 'if (outputs["logits"] > 0).all():\n            pass', "TSL102"),
    (LOOP, 'x = batch["x"]\n        if x.sum() > 0:\n            pass', "TSL102"),
    (LOOP, 'if "a" in outputs:\n            print(outputs["a"].item())', "TSL101"),
    (OUTPUTS, 'n = 3\n        if n in outputs.logits:\n            pass', "TSL102"),  # a number in a tensor: Tensor.__contains__
    (OUTPUTS, "if outputs.loss > 0:\n            pass", "TSL102"),
    (OUTPUTS, 'for v in outputs.values():\n            print(v.item())', "TSL101"),
    (OUTPUTS, 'print(outputs)', "TSL103"),  # formatting a dict of device tensors formats each
    (LIGHTNING, 'if batch["mask"].any():\n            pass', "TSL102"),
    (LIGHTNING, 'if "a" in batch:\n            print(batch["a"].item())', "TSL101"),
    (CALLBACK, 'if "loss" in outputs:\n            print(outputs["loss"].item())', "TSL101"),
]


@pytest.mark.parametrize(("template", "body"), CONTAINER_VALID)
def test_a_containers_membership_length_keys_and_truth_are_host_reads(template, body):
    src = template.format(body=body)
    assert not {f for f in found(src) if f[1] in ("TSL101", "TSL102")}, src


@pytest.mark.parametrize(("template", "body", "code"), CONTAINER_INVALID)
def test_the_tensors_a_container_holds_are_still_device_tensors(template, body, code):
    src = template.format(body=body)
    # the line that reads the tensor: a condition's `if`, else the last line of the body
    reads = next((ln for ln in body.splitlines() if ln.lstrip().startswith("if ")), body.splitlines()[-1]) if code == "TSL102" else body.splitlines()[-1]
    assert (line_of(src, reads.strip()), code) in found(src), src


def test_a_tensors_truth_value_stays_a_finding():
    src = OUTPUTS.format(body="logits = outputs.logits\n        if logits:\n            pass")
    assert (line_of(src, "if logits:"), "TSL102") in found(src)
    src = OUTPUTS.format(body="if -1 in y.to(device):\n            pass")  # Tensor.__contains__
    assert (line_of(src, "if -1 in"), "TSL102") in found(src)


def test_tuple_unpacking_and_attributes_on_self():
    src = """\
    import torch


    class Trainer:
        def __init__(self, model, opt, device):
            self.model, self.opt, self.device = model, opt, device

        def step(self, batch):
            self.out = self.model(**batch)
            if "aux" in self.out:
                pass
            loss, aux = self.out["loss"], self.out["aux"]
            if aux.isnan().any():
                pass
            loss.backward()
            self.opt.step()

        def fit(self, loader):
            for batch in loader:
                batch = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
                self.step(batch)
    """
    assert found(src) == {(line_of(src, "if aux.isnan"), "TSL102")}


def test_a_helper_returning_a_dict_of_device_tensors():
    src = """\
    import torch


    def forward_step(model, x):
        logits = model(x)
        return {"logits": logits, "loss": logits.sum()}


    def train(model, loader, opt, device):
        for x in loader:
            out = forward_step(model, x.to(device, non_blocking=True))
            if "loss" in out:
                loss = out["loss"]
            if out:
                pass
            print(out["logits"].max().item())
            loss.backward()
            opt.step()
    """
    assert found(src) == {(line_of(src, "print(out"), "TSL101")}


def test_a_dict_another_module_returns_is_a_container_there_too(tmp_path, capsys):
    files = {
        "steps.py": """\
            def run_model(model, x):
                logits = model(x)
                return {"loss": logits.sum(), "logits": logits}
        """,
        "train.py": """\
            import torch
            from steps import run_model


            def train(loader, opt, device):
                model = torch.nn.Linear(4, 4).to(device)
                for x in loader:
                    outputs = run_model(model, x.to(device, non_blocking=True))
                    if "logits" in outputs:
                        pass
                    if outputs:
                        pass
                    if outputs["logits"].isnan().any():
                        pass
                    outputs["loss"].backward()
                    opt.step()
        """,
    }
    assert dict(project(tmp_path, files, capsys)) == {("train.py", 13, "TSL102"): 1}


def test_filled_dict_keys_hold_what_was_stored_under_them():
    src = """\
    import torch


    def train(model, loader, opt, device):
        for x in loader:
            loss = model(x.to(device, non_blocking=True)).sum()
            loss.backward()
            opt.step()
            logs = {}
            logs["loss"] = loss
            logs["lr"] = opt.param_groups[0]["lr"]
            print(f"lr {logs['lr']:.2e}")
            print(f"loss {logs['loss']}")
    """
    assert found(src) == {(line_of(src, "loss {logs"), "TSL103")}


# -- 2. modules ---------------------------------------------------------------------------------
MODULES = textwrap.dedent("""\
    import copy
    import torch
    from torch_ema import ExponentialMovingAverage


    def train(model, loader, opt, device):
        model = model.to(device)
        {make}
        for x in loader:
            x = x.to(device, non_blocking=True)
            loss = model(x).sum()
            loss.backward()
            opt.step()
            {use}
""")


@pytest.mark.parametrize(
    ("make", "use"),
    [
        ("ema = ExponentialMovingAverage(model.parameters(), decay=0.99)", 'ema.to("cpu")\n        torch.save(ema.state_dict(), "ema.pt")'),
        ("ema = ExponentialMovingAverage(model.parameters(), decay=0.99)", 'state = ema.cpu().state_dict()'),
        ("ema = copy.deepcopy(model)", 'ema.to("cpu")'),
        ("ema = copy.deepcopy(model)", "ema.cpu()"),
        ("ema = ExponentialMovingAverage(model.parameters(), decay=0.99)", 'ema.eval()\n        ema.to("cpu")'),
    ],
)
def test_a_modules_move_is_no_tensor_read(make, use):
    src = MODULES.format(make=make, use=use)
    assert not {f for f in found(src) if f[1] == "TSL101"}, src


@pytest.mark.parametrize(
    "use",
    [
        'y = x.to("cpu")',  # a tensor's copy
        "y = loss.detach().cpu()",
        'ema = ExponentialMovingAverage(model.parameters(), decay=0.99)\n        y = ema.to("cpu")',  # no sign of a module
    ],
)
def test_a_tensors_move_to_the_cpu_stays_a_finding(use):
    src = MODULES.format(make="pass", use=use)
    assert {c for _, c in found(src)} >= {"TSL101"}, src


def test_a_module_held_on_self_and_in_a_lightning_hook():
    src = """\
    import copy
    import lightning as L


    class Lit(L.LightningModule):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.ema = copy.deepcopy(net)

        def training_step(self, batch, batch_idx):
            loss = self.net(batch).sum()
            self.ema.to("cpu")
            self.ema.load_state_dict(self.net.state_dict())
            probs = self.net(batch).softmax(-1).cpu()
            return loss
    """
    assert found(src) == {(line_of(src, "probs ="), "TSL101")}


# -- 3. bounded branches --------------------------------------------------------------------------
BOUNDED = textwrap.dedent("""\
    import torch


    def train(model, loader, opt, device):
        step = 0
        first = True
        for i, (x, y) in enumerate(loader):
            loss = model(x.to(device, non_blocking=True)).sum()
            loss.backward()
            opt.step()
            {body}
            step += 1
""")


@pytest.mark.parametrize(
    "body",
    [
        "if step == 0:\n            print(loss.item())",
        "if 0 == step:\n            print(loss.item())",
        "if i < 2:\n            print(loss.item())",
        "if not step:\n            print(loss.item())",
        "if i == len(loader) - 1:\n            print(loss.item())",  # once per pass
        "if step == 0 and device == 'cuda':\n            print(loss.item())",
        "if first:\n            print(loss.item())\n            first = False",
    ],
)
def test_a_branch_that_runs_a_bounded_number_of_times_is_not_per_step(body):
    src = BOUNDED.format(body=body)
    assert found(src) == set(), src


@pytest.mark.parametrize(
    ("body", "gated"),
    [
        ("if step % 10 == 0:\n            print(loss.item())", True),
        ("if (i + 1) % 50 == 0:\n            print(loss.item())", True),
        ("if step > 10:\n            print(loss.item())", False),  # every step after the tenth
        ("if step == 0 or step % 10 == 0:\n            print(loss.item())", True),
        ("n = 3\n        if n == 3:\n            print(loss.item())", None),  # no counter the code shows: not bounded
        ("if first:\n            print(loss.item())\n        first = True", False),  # set again
        ("if first:\n            print(loss.item())", False),  # never cleared
    ],
)
def test_gates_and_unbounded_branches_stay_reported(body, gated):
    src = BOUNDED.format(body=body)
    line = line_of(src, "print(loss.item())")
    assert (line, "TSL101") in found(src), src
    if gated is not None:  # (the message's "gated" still reads a counter from its name)
        assert ("gated" in messages(src)[line]) is gated


def test_bounded_branches_in_lightning_and_on_self():
    src = """\
    import lightning as L


    class Lit(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.logged = False

        def training_step(self, batch, batch_idx, optimizer_idx):
            loss = self.net(batch).sum()
            if self.global_step == 0:
                print(loss.item())
            if batch_idx < 2:
                print(loss.item())
            if not self.logged:
                print(loss.item())
                self.logged = True
            if optimizer_idx == 0:
                print(loss.item())
            return loss
    """
    assert found(src) == {(line_of(src, "if optimizer_idx") + 1, "TSL101")}


def test_a_bounded_branch_in_a_helper_its_loop_hands_the_counter():
    src = """\
    import torch


    def report(loss, step):
        if step == 0:
            print(loss.item())
        if step % 100 == 0:
            print(loss.item())


    def train(model, loader, opt, device):
        for i, x in enumerate(loader):
            loss = model(x.to(device, non_blocking=True)).sum()
            loss.backward()
            opt.step()
            report(loss, i)
    """
    assert found(src) == {(line_of(src, "if step % 100") + 1, "TSL101")}
    # a helper whose callers pass something else than a counter: not bounded
    other = src.replace("report(loss, i)", "report(loss, len(x))")
    assert found(other) == {(line_of(src, "if step == 0") + 1, "TSL101"), (line_of(src, "if step % 100") + 1, "TSL101")}


# -- 4. Python scalars ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        'lr = opt.param_groups[0]["lr"]\n        print(f"lr {lr:.2e}")',
        'print("lr %.5f" % opt.param_groups[0]["lr"])',
        'print("lr: {:.5f}".format(opt.param_groups[0]["lr"]))',
        'value = loss.detach()\n        v = value.item() if step % 10 == 0 else 0.0\n        print(f"{v}")',
        'stats = {"lr": opt.param_groups[0]["lr"], "loss": 0.0}\n        print(f"{stats[\'lr\']}")',
    ],
)
def test_formatting_a_python_float_is_no_sync(body):
    src = BOUNDED.format(body=body)
    assert not {f for f in found(src) if f[1] == "TSL103"}, src


def test_formatting_the_tensor_itself_stays_a_finding():
    src = BOUNDED.format(body='print(f"loss {loss}")')
    assert (line_of(src, 'print(f"loss'), "TSL103") in found(src)


# -- 5. one finding per hazard: a tensor built on the host and copied -----------------------------
COPIES = textwrap.dedent("""\
    import numpy as np
    import torch
    from torch.utils.data import DataLoader


    def train(model, opt, dataset, alpha):
        loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            out = model(x)
            {body}
            loss = out.sum()
            loss.backward()
            opt.step()
""")


@pytest.mark.parametrize(
    "body",
    [
        "z = torch.tensor(0).float().cuda()",
        "targets = torch.ones(out.shape) * -1\n        targets = targets.cuda()",
        "norm = torch.Tensor([[0.1, 0.1, 0.2, 0.2]])\n        norm = norm.cuda()",
        "acts = [y[0], y[1]]\n        a = torch.tensor(acts).cuda()",
        "mask = torch.BoolTensor(out.size()).fill_(0)\n        mask = mask.cuda()",  # a size: allocated on the host  # a list of device tensors read into a host tensor
        "w = (torch.ones(4) * 0.25).cuda()",
    ],
)
def test_a_tensor_built_on_the_host_and_copied_is_one_tsl305(body):
    src = COPIES.format(body=body)
    copy_line = line_of(src, body.splitlines()[-1].strip())
    assert found(src) == {(copy_line, "TSL305")}, src


@pytest.mark.parametrize(
    "body",
    [
        "y = y.cuda()",  # a batch: TSL301
        "y = y.float().cuda()",
        "t = (y * 2).cuda()",  # arithmetic on a batch
        "obs = torch.from_numpy(np.zeros(3)).cuda()",  # an array the step is handed: its copy
    ],
)
def test_a_batch_copy_stays_tsl301(body):
    src = COPIES.format(body=body)
    assert {c for _, c in found(src)} == {"TSL301"}, src


def test_an_array_handed_to_the_step_is_data_not_a_constant():
    """`img = torch.Tensor(image); img = img.cuda()`: the image is the data (TSL301's kind of
    copy, when it comes from a loader), not a constant TSL305 would hoist."""
    src = COPIES.format(body="img = torch.Tensor(np.zeros((3, 4)))\n        img = img.cuda()")
    assert "TSL305" not in {c for _, c in found(src)}


@pytest.mark.parametrize("empty", ["{}", "dict()"])
def test_a_host_copy_for_a_plot_is_no_device_copy(empty):
    """`images[k] = images[k].cpu()` of the dict a model's `log_images` returns: a dict entry
    replaced by a host copy (the read is TSL101's), nothing copied to the device."""
    src = """\
    import lightning as L


    class Lit(L.LightningModule):
        def log_images(self, batch):
            log = EMPTY
            log["inputs"] = batch["x"]
            log["recon"] = self.net(batch["x"])
            return log

        def training_step(self, batch, batch_idx):
            images = self.log_images(batch)
            for k in images:
                images[k] = images[k].detach().cpu()
            return self.net(batch["x"]).sum()
    """.replace("EMPTY", empty)
    assert found(src) == {(line_of(src, "images[k] = images[k]"), "TSL101")}


def test_a_dict_indexed_by_the_keys_it_is_iterated_for_is_a_container():
    src = """\
    import torch


    def train(model, loader, opt, device):
        for x in loader:
            outs = model(x.to(device, non_blocking=True))
            for k in outs:
                outs[k] = outs[k].float()
            if outs:
                pass
            loss = sum(outs.values())
            loss.backward()
            opt.step()
    """
    assert found(src) == set()
    rows = src.replace("outs[k] = outs[k].float()", "print(k.sum().item())")  # a tensor's rows
    assert found(rows) == {(line_of(rows, "if outs:"), "TSL102"), (line_of(rows, "print(k.sum"), "TSL101")}


# -- the domain itself ------------------------------------------------------------------------------
KIND_HEAD = "import copy\nimport torch\ndevice = torch.device('cuda')\nmodel = torch.nn.Linear(2, 2).to(device)\nloss = model(torch.ones(2)).sum()\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("t = (loss, loss * 2)", "CONTAINER"),
        ("t = {'loss': loss}", "CONTAINER"),
        ("t = [v * 2 for v in (loss, loss)]", "CONTAINER"),
        ("t = (loss, loss)[0]", "DEVICE"),
        ("t = {'loss': loss}['loss']", "DEVICE"),
        ("t = sum([loss, loss])", "DEVICE"),
        ("t = torch.cat([loss, loss])", "DEVICE"),
        ("t = torch.stack((loss, loss)).mean()", "DEVICE"),
        ("out = model(torch.ones(2))\nif 'a' in out:\n    pass\nt = out", "CONTAINER"),
        ("out = model(torch.ones(2))\nt = out", "DEVICE"),  # no sign of a container: a tensor
        ("out = model(torch.ones(2))\nif 'a' in out:\n    pass\nt = out['a']", "DEVICE"),
        ("out = model(torch.ones(2))\nt = out.keys()", "HOST"),  # a tensor has no keys: a mapping's names
        ("out = {'a': loss}\nt = out.keys()", "HOST"),
        ("out = {'a': loss}\nt = len(out)", "HOST"),
        ("t = copy.deepcopy(model)", "MODEL"),
        ("t = copy.deepcopy(loss)", "DEVICE"),
        ("t = Ema(model.parameters())\nt.load_state_dict({})", "MODEL"),
        ("t = Ema(model.parameters())", "DEVICE"),  # an opaque maker of device values, no sign of a module
    ],
)
def test_what_a_value_is(body, expected):
    from tests.test_analysis import kind_of_last

    assert kind_of_last(KIND_HEAD + body + "\nprobe(t)\n", "t").name == expected


# -- a step-interval gate is judged by what the code counts with, not by the counter's name ------
GATED_COMPUTE = textwrap.dedent("""\
    import torch
    from torchmetrics import MeanMetric


    def train(model, loader, opt, device, every):
        metric = MeanMetric().to(device)
        history = []
        {init}
        for x, y in loader:
            loss = model(x.to(device, non_blocking=True)).sum()
            loss.backward()
            opt.step()
            metric.update(loss.detach())
            {count}
            if {test}:
                history.append(metric.compute())
        return history
""")


@pytest.mark.parametrize("name", ["step", "v12", "n_done", "tick"])
@pytest.mark.parametrize("init, count, test", [
    ("{n} = 0", "{n} += 1", "{n} % every == 0"),
    ("{n} = 0", "{n} += 1", "not {n} % every"),
    ("{n} = 0", "{n} += 1", "({n} + 1) % 50 == 0"),
])
def test_a_gate_on_an_incremented_counter_is_gated_whatever_its_name(name, init, count, test):
    src = GATED_COMPUTE.format(init=init.format(n=name), count=count.format(n=name), test=test.format(n=name))
    assert not {c for _, c in found(src, {"TSL204"})}, "compute() every N steps is not per-step"


@pytest.mark.parametrize("test", ["tick % every == 0", "len(history) % every == 0"])
def test_a_modulo_of_no_counter_is_no_gate(test):
    # near-misses: `tick` is never incremented, `len(history)` is no step counter
    src = GATED_COMPUTE.format(init="tick = 0", count="pass", test=test)
    assert {c for _, c in found(src, {"TSL204"})} == {"TSL204"}


# -- a tensor method that returns a Python value without arguments ----------------------------
def type_case(*lines: str) -> str:
    body = "".join(f"        {line}\n" for line in lines)
    return (
        "import torch\n\n\n"
        "def train(model, loader, opt):\n"
        "    for x in loader:\n"
        "        spect = model(x.cuda(non_blocking=True))\n"
        f"{body}"
        "        spect.sum().backward()\n"
        "        opt.step()\n"
    )


@pytest.mark.parametrize("lines", [
    ("if spect.type() == 'torch.cuda.HalfTensor':", "    pass"),
    ("half = spect.type() == 'torch.cuda.HalfTensor'", "if half:", "    pass"),
    ("name = spect.type()", "print(name)"),
])
def test_the_type_name_of_a_device_tensor_is_a_str(lines):
    assert found(type_case(*lines)) == set()


@pytest.mark.parametrize("lines", [
    ("if spect.type(torch.float32).sum() > 0:", "    pass"),  # a cast: still a tensor
    ("if (spect > 0).any():", "    pass"),
])
def test_a_cast_with_type_is_still_a_tensor(lines):
    assert "TSL102" in {c for _, c in found(type_case(*lines))}
