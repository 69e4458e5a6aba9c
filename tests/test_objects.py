"""Values that live on objects and the evidence that places them (issue 21), case by case:
each mechanism with the hazard it finds and a near-miss it must leave alone. Single modules are
linted alone; projects are written to a temporary directory and checked as a tree and file by
file (the answers must agree)."""

from __future__ import annotations

import collections
import json
import textwrap
from pathlib import Path

import pytest

from torchsync_lint.cli import main
from torchsync_lint.engine import lint_source
from torchsync_lint.rule import load_rules

RULES = load_rules()

LOOP = """\
import torch
def train(model, loader, opt, device):
    model = model.to(device)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
{body}
"""


def findings(source: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.code) for f in lint_source(textwrap.dedent(source), "t.py", RULES) if f.code < "TSL9")


def at(source: str, snippet: str) -> int:
    """The line of ``source`` holding ``snippet`` (the first)."""
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if snippet in line)


def in_loop(body: str) -> str:
    return LOOP.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))


def project(tmp_path: Path, files: dict[str, str], capsys, *, select: str | None = None, fields=("line", "code"), relative: bool = False) -> collections.Counter:
    """Lint ``files`` as one project, whole and each file alone; both must agree. Findings
    count as (file, *fields): the file's name, or with ``relative`` its path in the project;
    ``select`` narrows the rules (`--select`)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))

    def file_of(path: str) -> str:
        return Path(path).resolve().relative_to(tmp_path.resolve()).as_posix() if relative else Path(path).name

    def run(*paths) -> collections.Counter:
        code = main(["check", "--format", "json", "--no-cache", *(["--select", select] if select else []), *paths])
        out, err = capsys.readouterr()
        assert code in (0, 1), err
        return collections.Counter((file_of(r["path"]), *(r[f] for f in fields)) for r in json.loads(out) if r["code"] < "TSL9")

    whole = run(str(tmp_path))
    for name in files:
        alone = run(str(tmp_path / name))
        own = file_of(str(tmp_path / name))
        assert alone == collections.Counter({k: v for k, v in whole.items() if k[0] == own}), name
    return whole


# -- evidence: backward ---------------------------------------------------------------------------
def test_a_backpropagated_value_of_unknown_place_is_on_the_device():
    src = in_loop("""\
        loss = compute_loss(model, x, y)
        loss.backward()
        opt.step()
        print(loss.item())
    """).replace("import torch", "import torch\nfrom helpers import compute_loss")
    assert (at(src, "print(loss.item())"), "TSL101") in findings(src)


def test_through_a_scaler_and_the_terms_of_a_summed_dict():
    src = in_loop("""\
        losses = compute_losses(model, x, y)
        loss = sum(loss for loss in losses.values())
        scaler.scale(loss).backward()
        for name, value in losses.items():
            print(name, value.item())
    """).replace("import torch", "import torch\nfrom helpers import compute_losses\nscaler = torch.cuda.amp.GradScaler()")
    assert (at(src, "value.item()"), "TSL101") in findings(src)


def test_a_cpu_model_loss_stays_on_the_cpu_despite_backward():
    src = """\
    import torch
    def train(loader):
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
            print(loss.item())
    """
    assert findings(src) == []


def test_without_backward_an_opaque_result_of_no_device_input_stays_unknown():
    with_backward = in_loop("""\
        stats = summarize(model, 3)
        stats.backward()
        opt.step()
        print(stats.item())
    """).replace("import torch", "import torch\nfrom helpers import summarize")
    assert (at(with_backward, "print(stats.item())"), "TSL101") in findings(with_backward)
    without = with_backward.replace("stats.backward()", "model(x).sum().backward()")
    assert (at(without, "print(stats.item())"), "TSL101") not in findings(without)


# -- narrowing ----------------------------------------------------------------------------------
def test_the_else_of_a_tensor_test_is_no_tensor():
    src = in_loop("""\
        loss = model(x).sum()
        loss.backward()
        for value in [loss]:
            if isinstance(value, torch.Tensor):
                value = value.item()
            else:
                value = float(value)
            v2 = float(value) if not torch.is_tensor(value) else 0
    """)
    found = findings(src)
    assert (at(src, "value = value.item()"), "TSL101") in found
    assert (at(src, "value = float(value)"), "TSL101") not in found and (at(src, "v2 ="), "TSL101") not in found


# -- **kwargs and *args --------------------------------------------------------------------------
def test_keyword_arguments_gathered_in_kwargs_keep_their_kinds():
    src = """\
    import torch
    class Logger:
        def update(self, **kwargs):
            for k, v in kwargs.items():
                print(k, v.item())
    def train(model, loader, opt, extra):
        log = Logger()
        for x, y in loader:
            loss = model(x.cuda(non_blocking=True)).sum()
            loss.backward()
            opt.step()
            log.update(loss=loss, **extra)
    """
    assert (at(src, "v.item()"), "TSL101") in findings(src)


def test_kwargs_given_only_host_numbers_are_silent():
    src = """\
    import torch
    class Logger:
        def update(self, **kwargs):
            for k, v in kwargs.items():
                print(k, float(v))
    def train(model, loader, opt):
        log = Logger()
        for x, y in loader:
            loss = model(x.cuda(non_blocking=True)).sum()
            loss.backward()
            opt.step()
            log.update(loss=loss.item(), lr=0.1)
    """
    assert findings(src) == [(at(src, "loss.item()"), "TSL101")]


# -- containers and submodules ------------------------------------------------------------------
def test_a_store_into_a_dict_display_is_no_copy_to_the_device():
    src = """\
    import lightning as L
    class Net(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            out = self.net(x)
            sample = {"image": x, "pred": out.argmax(1)}
            for key in ["image", "pred"]:
                sample[key] = sample[key].cpu()
            t = torch.zeros(4, device=self.device)
            t[0:2] = torch.zeros(2)
    """
    found = findings(src)
    assert (at(src, "sample[key] ="), "TSL305") not in found


def test_submodules_and_gradients_of_a_device_model_are_on_the_device():
    src = in_loop("""\
        loss = model(x).sum()
        loss.backward()
        opt.step()
        last = list(model.children())[-1]
        for name, p in last.named_parameters():
            print(p.grad.norm().item())
    """)
    assert (at(src, "p.grad.norm()"), "TSL101") in findings(src)


def test_a_boolean_factory_mask_indexes_dynamically_but_a_float_one_does_not():
    src = in_loop("""\
        sim = model(x)
        loss = sim.sum()
        loss.backward()
        mask = torch.eye(sim.shape[0], dtype=torch.bool, device=device)
        a = sim[~mask]
        w = torch.eye(sim.shape[0], dtype=torch.float32, device=device)
        b = sim * w
    """)
    found = findings(src)
    assert (at(src, "a = sim[~mask]"), "TSL105") in found and (at(src, "b = sim * w"), "TSL105") not in found


# -- across modules -------------------------------------------------------------------------------
TRAINER = """\
import torch

class Trainer:
    def __init__(self, model, loader, criterion, optimizer, device):
        self.model, self.loader, self.criterion = model, loader, criterion
        self.optimizer, self.device = optimizer, device

    def run(self):
        for images, target in self.loader:
            images = images.to(self.device, non_blocking=True)
            out = self.model(images)
            losses = self.criterion(out, target.to(self.device, non_blocking=True))
            loss = sum(losses.values())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            for name, value in losses.items():
                print(name, value.item())
"""

DATA = """\
from torch.utils.data import DataLoader

class Data:
    def __init__(self, dataset, workers):
        self.train = DataLoader(dataset, batch_size=64, num_workers=workers)
        self.val = DataLoader(dataset, batch_size=64, num_workers=workers, pin_memory=True)
"""

MAIN = """\
import torch
from data import Data
from trainer import Trainer

def terms(out, target):
    return {{"ce": torch.nn.functional.cross_entropy(out, target)}}

def main(dataset):
    data = Data(dataset, workers=4)
    model = torch.nn.Linear(8, 2).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    Trainer(model, data.{which}, terms, opt, "cuda").run()
"""


def test_a_loader_held_on_an_object_feeds_the_device_through_another_object(tmp_path, capsys):
    found = project(tmp_path, {"trainer.py": TRAINER, "data.py": DATA, "main.py": MAIN.format(which="train")}, capsys)
    assert found[("data.py", 5, "TSL302")] == 1  # `data.train`, handed to Trainer, copied to the GPU
    assert found[("trainer.py", 18, "TSL101")] == 1  # the losses of the function stored on `self.criterion`


def test_the_pinned_loader_of_the_same_object_is_silent(tmp_path, capsys):
    found = project(tmp_path, {"trainer.py": TRAINER, "data.py": DATA, "main.py": MAIN.format(which="val")}, capsys)
    assert not [f for f in found if f[0] == "data.py"]


BASE = """\
class Trainer:
    def __init__(self, model, get_batch):
        self.model = model
        self.get_batch = get_batch

    def train_iteration(self, steps):
        for _ in range(steps):
            self.train_step()

    def train_step(self):
        raise NotImplementedError
"""

SUB = """\
from base import Trainer

class SeqTrainer(Trainer):
    def train_step(self):
        x, y = self.get_batch(8)
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss.detach().cpu().item()
"""

SCRIPT = """\
import numpy as np
import torch
from sub import SeqTrainer

def get_batch(n):
    x = torch.from_numpy(np.zeros((n, 4))).to(dtype=torch.float32, device="cuda")
    return x, x

def main():
    SeqTrainer(torch.nn.Linear(4, 4).to("cuda"), get_batch).train_iteration(100)
    print(torch.from_numpy(np.zeros(4)).to("cuda"))
"""


def test_a_base_class_loop_runs_the_subclass_step_and_the_function_it_was_given(tmp_path, capsys):
    found = project(tmp_path, {"base.py": BASE, "sub.py": SUB, "script.py": SCRIPT}, capsys)
    assert found[("sub.py", 8, "TSL101")] == 1
    assert found[("script.py", 6, "TSL301")] == 1
    assert not [f for f in found if f[0] == "script.py" and f[1] != 6]  # main() runs once


METERS = """\
class Meter:
    def __init__(self):
        self.val = 0
    def update(self, val):
        self.val = val
"""

LOGGING = """\
import torch
from meters import Meter

def train(model, loader, opt):
    acc, lr = Meter(), Meter()
    for step, (x, y) in enumerate(loader):
        out = model(x.cuda(non_blocking=True))
        loss = out.sum()
        loss.backward()
        opt.step()
        acc.update((out.argmax(1) == y.cuda(non_blocking=True)).float().mean())
        lr.update(0.1)
        if step % 100 == 0:
            print(f"{acc.val:.2f}")
"""


def test_a_field_of_an_instance_of_another_module_holds_what_its_methods_were_given(tmp_path, capsys):
    found = project(tmp_path, {"meters.py": METERS, "train.py": LOGGING}, capsys)
    assert found[("train.py", 14, "TSL103")] == 1


def test_an_optional_writer_is_still_a_writer():
    src = in_loop("""\
        loss = model(x).sum()
        loss.backward()
        opt.step()
        if writer:
            writer.add_scalar("loss", loss)
    """).replace("def train(model, loader, opt, device):", "def train(model, loader, opt, device, log):\n    writer = SummaryWriter() if log else None").replace(
        "import torch", "import torch\nfrom torch.utils.tensorboard import SummaryWriter"
    )
    assert (at(src, "writer.add_scalar"), "TSL106") in findings(src)


def test_a_loop_over_several_loaders_and_the_tail_of_a_pass_are_not_per_step():
    src = """\
    import torch
    def evaluate(model, loader):
        outs = []
        for x, y in loader:
            outs.append(model(x.cuda(non_blocking=True)))
        total = torch.cat(outs)
        return total.sum().item()

    def run_all(model, loaders, names):
        results = []
        for name, loader in zip(names, loaders):
            results.append(evaluate(model, loader))
            print(name, torch.tensor(results, device="cuda"))
        return results
    """
    assert findings(src) == []


# -- DataLoader subclasses ------------------------------------------------------------------------
LOADERS = """\
from torch.utils.data import DataLoader

class AudioLoader(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

class PinnedLoader(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, pin_memory=True, **kwargs)
"""

EVAL = """\
def evaluate(model, loader, device):
    for x, y in loader:
        out = model(x.to(device, non_blocking=True))
"""

RUN = """\
import torch
from loaders import AudioLoader, PinnedLoader
from evaluation import evaluate

def main(ds):
    model = torch.nn.Linear(2, 2).to("cuda")
    evaluate(model, AudioLoader(ds, num_workers=4), "cuda")
    evaluate(model, PinnedLoader(ds, num_workers=4), "cuda")
    evaluate(model, AudioLoader(ds, 64, True, None, None, 4, None, True), "cuda")
"""


def test_a_project_dataloader_subclass_is_a_loader_and_what_it_sets_itself_counts(tmp_path, capsys):
    found = project(tmp_path, {"loaders.py": LOADERS, "evaluation.py": EVAL, "run.py": RUN}, capsys)
    assert [f for f in found if f[0] == "run.py"] == [("run.py", 7, "TSL302")]


# -- factories picked by the config ---------------------------------------------------------------
LOSSES = """\
import torch

class Dice(torch.nn.Module):
    def forward(self, out, target):
        return (out - target).abs().mean()

class Focal(torch.nn.Module):
    def forward(self, out, target):
        print(out.max().item())
        return out.mean()
"""

PICKS = """\
import torch
import losses

ARCHS = {{"lin": torch.nn.Linear}}

def build(module, name):
    return getattr(module, name)()

def main(cfg, loader):
    model = torch.nn.Linear(2, 2).to("cuda")
    criterion = {pick}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = criterion(model(x.to("cuda", non_blocking=True)), y.to("cuda", non_blocking=True))
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("pick", ['getattr(losses, cfg["loss"])()', 'build(losses, cfg["loss"])'])
def test_a_loss_picked_from_a_module_by_the_config_runs_every_step(tmp_path, capsys, pick):
    found = project(tmp_path, {"losses.py": LOSSES, "train.py": PICKS.format(pick=pick)}, capsys)
    assert found[("losses.py", 9, "TSL101")] == 1


def test_a_loss_named_by_a_constant_attribute_is_only_that_loss(tmp_path, capsys):
    found = project(tmp_path, {"losses.py": LOSSES, "train.py": PICKS.format(pick='getattr(losses, "Dice")()')}, capsys)
    assert not [f for f in found if f[0] == "losses.py"]


SUPER = """\
class Base:
    def __init__(self, model, loss):
        self.model, self.loss = model, loss

class Trainer(Base):
    def __init__(self, model, loss):
        super().__init__(model, loss)

    def run(self, loader, opt):
        for x, y in loader:
            loss = self.loss(self.model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            loss.backward()
            opt.step()
"""

SUPER_MAIN = """\
import torch
from trainer import Trainer
from losses import Focal

def main(loader, opt):
    Trainer(torch.nn.Linear(2, 2).cuda(), Focal()).run(loader, opt)
"""


def test_what_a_subclass_hands_its_base_through_super_reaches_the_base(tmp_path, capsys):
    found = project(tmp_path, {"losses.py": LOSSES, "trainer.py": SUPER, "main.py": SUPER_MAIN}, capsys)
    assert found[("losses.py", 9, "TSL101")] == 1
    assert not [f for f in found if f[:2] == ("losses.py", 5)]


# -- trainer frameworks, Lightning helpers, transforms built elsewhere ------------------------------
def test_a_trainer_frameworks_per_batch_methods_are_per_step_and_get_device_batches():
    src = """\
    import torch
    from pytorch_accelerated import Trainer
    from torch.utils.data import random_split
    from torchvision import datasets, transforms

    class MyTrainer(Trainer):
        def calculate_train_batch_loss(self, batch):
            x, y = batch
            loss = self.loss_func(self.model(x), y)
            print(loss.item())
            return {"loss": loss, "model_outputs": None, "batch_size": x.size(0)}

        def train_epoch_end(self):
            print(torch.tensor([1.0], device="cuda").item())

    def main(model):
        ds = datasets.MNIST("data", transform=transforms.ToTensor())
        train, val = random_split(ds, [50000, 10000])
        MyTrainer(model, loss_func=torch.nn.CrossEntropyLoss(), optimizer=None).train(train_dataset=train, eval_dataset=val)
    """
    found = findings(src)
    assert (at(src, "print(loss.item())"), "TSL101") in found
    assert (at(src, "transforms.ToTensor()"), "TSL304") in found
    assert (at(src, "def train_epoch_end") + 1, "TSL101") not in found  # once per epoch


def test_a_lightning_helper_logs_with_the_defaults_of_the_hook_that_calls_it():
    src = """\
    import lightning as L

    class Net(L.LightningModule):
        def training_step(self, batch, batch_idx):
            return self._step(batch, "train")

        def _step(self, batch, mode):
            loss = self.net(batch).sum()
            self.log(f"{mode}_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, batch_idx):
            return self._eval(batch)

        def _eval(self, batch):
            loss = self.net(batch).sum()
            self.log("val_loss", loss)
            return loss
    """
    found = findings(src)
    assert (at(src, 'self.log(f"{mode}_loss"'), "TSL106") in found
    assert (at(src, 'self.log("val_loss"'), "TSL106") not in found  # evaluation logs per epoch by default


TRANSFORMS = """\
from torchvision import transforms

class TwoViews:
    def __init__(self, size):
        self.train_transform = transforms.Compose([transforms.RandomResizedCrop(size), transforms.ToTensor()])

    def __call__(self, x):
        return self.train_transform(x), self.train_transform(x)

def make_eval(size):
    return transforms.Compose([transforms.Resize(size), transforms.ToTensor()])

def unused(size):
    return transforms.Compose([transforms.Resize(size), transforms.ToTensor()])
"""

FEEDING = """\
import torch
from torch.utils.data import DataLoader
from torchvision import datasets
from views import TwoViews, make_eval

def main(model):
    train = DataLoader(datasets.STL10("d", transform=TwoViews(96)), num_workers=4, pin_memory=True)
    test = datasets.STL10("d", split="test", transform=make_eval(96)) if torch.cuda.is_available() else None
    evaluation = DataLoader(test, num_workers=4, pin_memory=True) if test is not None else None
    for loader in (train, evaluation):
        for x, y in loader:
            model(x.cuda(non_blocking=True))
"""


def test_a_transform_class_or_factory_of_another_module_feeding_the_device_gets_its_tsl304(tmp_path, capsys):
    found = project(tmp_path, {"views.py": TRANSFORMS, "train.py": FEEDING}, capsys)
    assert found[("views.py", 5, "TSL304")] == 1
    assert found[("views.py", 11, "TSL304")] == 1
    assert found[("views.py", 14, "TSL304")] == 0  # built, never handed to a fed dataset


# -- one class, many instances ----------------------------------------------------------------------
AVERAGE_METER = """\
class AverageMeter:
    def __init__(self, name):
        self.name = name
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
"""

METER_LOOP = """\
def train(model, loader, opt):
    losses = AverageMeter("Loss")
    top1 = AverageMeter("Acc@1")
    for i, (x, y) in enumerate(loader):
        out = model(x.cuda(non_blocking=True))
        loss = out.sum()
        loss.backward()
        opt.step()
        losses.update(loss.item(), x.size(0))
        top1.update((out.argmax(1) == y.cuda(non_blocking=True)).float().mean(), x.size(0))
        if i % 10 == 0:
            print(f"loss {losses.avg:.3f} {losses.val:.3f}")
            print(f"acc {top1.avg:.3f}")
"""


def test_each_meter_holds_what_its_own_updates_gave_in_one_module():
    src = "import torch\n" + AVERAGE_METER + "\n" + METER_LOOP
    found = findings(src)
    assert (at(src, 'print(f"acc {top1.avg'), "TSL103") in found
    assert (at(src, 'print(f"loss {losses.avg'), "TSL103") not in found


def test_each_meter_holds_what_its_own_updates_gave_across_modules(tmp_path, capsys):
    train = "import torch\nfrom meters import AverageMeter\n\n" + METER_LOOP
    found = project(tmp_path, {"meters.py": AVERAGE_METER, "train.py": train}, capsys)
    assert found[("train.py", at(train, 'print(f"acc {top1.avg'), "TSL103")] == 1
    assert found[("train.py", at(train, 'print(f"loss {losses.avg'), "TSL103")] == 0


def test_a_meter_that_escapes_keeps_what_every_call_site_passes():
    src = "import torch\n" + AVERAGE_METER + "\n" + METER_LOOP.replace(
        "        losses.update(loss.item(), x.size(0))", "        losses.update(loss.item(), x.size(0))\n        record(losses, loss)"
    ) + "\ndef record(meter, value):\n    meter.update(value)\n"
    assert (at(src, 'print(f"loss {losses.avg'), "TSL103") in findings(src)  # `record` feeds it a device loss


def test_a_library_meter_keeps_what_its_update_got():
    src = in_loop("""\
        loss = model(x).sum()
        loss.backward()
        opt.step()
        norm_meter.update(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        loss_meter.update(loss.item())
        aux_meter.update(loss if isinstance(loss, float) else loss.item())
        print(f"{norm_meter.val:.3f} {loss_meter.val:.3f} {aux_meter.avg:.3f}")
    """).replace("import torch", "import torch\nfrom timm.utils import AverageMeter").replace(
        "    model = model.to(device)", "    model = model.to(device)\n    norm_meter, loss_meter, aux_meter = AverageMeter(), AverageMeter(), AverageMeter()"
    )
    found = [f for f in findings(src) if f[1] == "TSL103"]
    assert found == [(at(src, "print(f"), "TSL103")]  # one finding: the norm meter's value


BUILD = """\
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

def build_transform(train):
    t = []
    if train:
        t.append(transforms.RandomCrop(32))
    t.append(transforms.ToTensor())
    return transforms.Compose(t)

def build_dataset(train):
    return datasets.CIFAR10("d", train=train, transform=build_transform(train)), 10

def build_loaders(simple):
    if simple:
        return DataLoader(build_dataset(True)[0], pin_memory=True, num_workers=2)
    train, classes = build_dataset(True)
    return DataLoader(train, pin_memory=True, num_workers=2), classes
"""

USE = """\
import torch
from build import build_loaders

def main(model):
    loader, classes = build_loaders(False)
    for x, y in loader:
        model(x.cuda(non_blocking=True))
"""


def test_a_transform_list_built_by_appends_in_a_helper_of_a_builder_that_returns_tuples(tmp_path, capsys):
    found = project(tmp_path, {"build.py": BUILD, "use.py": USE}, capsys)
    assert found[("build.py", 8, "TSL304")] == 1


def test_an_object_whose_backward_is_handed_the_loss_is_not_the_loss():
    src = in_loop("""\
        loss = model(x).sum()
        helper.backward(loss)
        opt.step()
        if helper.sync_gradients:
            print(loss)
    """).replace("def train(model, loader, opt, device):", "def train(model, loader, opt, device, helper):")
    found = findings(src)
    assert (at(src, "if helper.sync_gradients"), "TSL102") not in found
    assert (at(src, "print(loss)"), "TSL103") in found


NMS = """\
import torch

def nms(boxes, classes=None, flip=False):
    keep = boxes[:, 0] > 0
    if classes is not None:
        keep = keep & (boxes[:, 1] == torch.tensor(classes, device=boxes.device)).any(1)
    if flip:
        print(boxes.sum().item())
    return keep
"""

DETECT = """\
import torch
from nms import nms

def evaluate(model, loader):
    for x, y in loader:
        out = model(x.cuda(non_blocking=True))
        nms(out{extra})
"""


@pytest.mark.parametrize(("extra", "flagged"), [("", False), (", classes=[1, 2]", True), (", flip=True", True)])
def test_a_branch_a_default_turns_off_runs_only_if_a_caller_passes_the_parameter(tmp_path, capsys, extra, flagged):
    found = project(tmp_path, {"nms.py": NMS, "detect.py": DETECT.format(extra=extra)}, capsys)
    in_branches = {f for f in found if f[0] == "nms.py" and f[1] in (6, 8)}
    assert bool(in_branches) is flagged, found


PREFETCH = """\
import torch

class Prefetcher:
    def __init__(self, loader, device):
        self.loader = loader
        self.device = device
        self.next_input = None

    def preload(self):
        self.next_input, self.next_target = next(self.loaditer)
        self.next_input = self.next_input.cuda(device=self.device, non_blocking=True)
        self.next_target = self.next_target.cuda(device=self.device, non_blocking=True)

    def __iter__(self):
        self.loaditer = iter(self.loader)
        self.preload()
        while self.next_input is not None:
            x, y = self.next_input, self.next_target
            self.preload()
            yield x, y
"""

PREFETCH_TRAINER = """\
import torch
from prefetch import Prefetcher

def get_instance(module, name, cfg):
    return getattr(module, cfg[name])()

class Trainer:
    def __init__(self, model, loader, loss):
        self.model, self.loss = model, loss
        self.loader = Prefetcher(loader, "cuda")

    def train(self, opt):
        for i, (x, y) in enumerate(self.loader):
            loss = self.loss(self.model(x), y)
            loss.backward()
            opt.step()
            if (y == 0).any():
                print("empty")
"""


def test_a_prefetcher_whose_iter_yields_device_batches_and_a_loss_picked_through_a_helper(tmp_path, capsys):
    found = project(tmp_path, {"prefetch.py": PREFETCH, "trainer.py": PREFETCH_TRAINER}, capsys)
    assert found[("trainer.py", at(PREFETCH_TRAINER, "if (y == 0).any()"), "TSL102")] == 1


CLOSURE_SCRIPT = """\
import numpy as np
import torch
from sub import SeqTrainer

def main(device):
    def get_batch(n):
        x = torch.from_numpy(np.zeros((n, 4))).to(dtype=torch.float32, device=device)
        return x, x

    SeqTrainer(torch.nn.Linear(4, 4).to("cuda"), get_batch).train_iteration(100)
"""


def test_a_closure_handed_to_a_trainer_runs_every_step(tmp_path, capsys):
    found = project(tmp_path, {"base.py": BASE, "sub.py": SUB, "script.py": CLOSURE_SCRIPT}, capsys)
    assert found[("script.py", 7, "TSL301")] == 1


def test_a_package_imported_from_a_program_directory_beside_a_module_of_the_same_name(tmp_path, capsys):
    """`gym/pkg/models/model.py` and `gym/pkg/models/pkg.py`: `from pkg.models.model import Base`
    in `pkg.py` is the package under `gym/` (its script's directory), not the neighbour `pkg.py`."""
    files = {
        "gym/pkg/models/model.py": "import torch\n\nclass Base(torch.nn.Module):\n    pass\n",
        "gym/pkg/models/pkg.py": "import torch\nfrom pkg.models.model import Base\n\nclass Net(Base):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n",
        "gym/run.py": "import torch\nfrom pkg.models.pkg import Net\n\ndef main(loader, opt):\n    net = Net().cuda()\n    for x, y in loader:\n        net(x.cuda(non_blocking=True)).sum().backward()\n        opt.step()\n",
    }
    found = project(tmp_path, files, capsys)
    assert found[("pkg.py", 6, "TSL102")] == 1


def test_code_after_a_pass_that_pulls_batches_with_next_runs_once_per_pass():
    src = """\
    import torch

    def features(model, dl, n):
        feats = []
        for _ in range(n):
            x = next(dl).cuda(non_blocking=True)
            feats.append(model(x))
        return torch.cat(feats).cpu().numpy()

    def train(model, loader, opt):
        for step, (x, y) in enumerate(loader):
            model(x.cuda(non_blocking=True)).sum().backward()
            opt.step()
            if step % 1000 == 0:
                features(model, iter(loader), 10)
    """
    assert (at(src, "return torch.cat(feats)"), "TSL101") not in findings(src)


def test_reusing_the_module_alone_answers_changes_no_answer(tmp_path):
    """The analysis with the project's answers starts from the module-alone analysis's answers
    that asked the project nothing: every expression must get the kind a fresh analysis gives
    (here `torch` itself comes through `from utils import *`, which only the project knows)."""
    import libcst as cst

    from torchsync_lint.analysis import ModuleAnalysis
    from torchsync_lint.project import summary
    from torchsync_lint.project.session import Session

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "utils.py").write_text("import torch\ndevice = torch.device('cuda')\n\ndef helper(x):\n    return x * 2\n")
    src = (
        "from utils import *\n\n"
        "def train(model, loader, opt):\n"
        "    limit = 10\n"
        "    buf = torch.zeros(4, 3)\n"
        "    for x, y in loader:\n"
        "        out = helper(model(x.to(device, non_blocking=True)))\n"
        "        buf[0] = out.sum()\n"
        "        out.sum().backward()\n"
        "        opt.step()\n"
        "        print(buf.to(device)[buf > 0])\n"
        "        helper(buf)\n"
    )
    (tmp_path / "train.py").write_text(src)
    session = Session(tmp_path, use_cache=False, files=["train.py"])
    session.prepare(1)
    alone = ModuleAnalysis(cst.parse_module(src), src)
    summary.summarize(alone, "train.py")
    seeded = alone.with_env(session.env_for("train.py"))
    fresh = ModuleAnalysis(cst.parse_module(src), src, session.env_for("train.py"))

    def kinds(analysis):
        return [analysis.kind(n) for n in analysis.tree.nodes if isinstance(n, cst.BaseExpression)]

    assert kinds(seeded) == kinds(fresh)


def test_abstract_values_of_a_long_reassignment_chain_stay_linear(monkeypatch):
    """`if flag: x = f(x)`, again and again: the last `x` has every earlier definition
    reaching it, and each of those reads `x` again. Walked path by path that is 2**depth
    abstract values (a 5.4 s summary of one real project); memoised per node and depth, each is
    computed once."""
    import libcst as cst

    from torchsync_lint.analysis import ModuleAnalysis
    from torchsync_lint.project import abstract, summary

    steps = "".join(f"    if flag{i}:\n        x = x + step{i}(x)\n" for i in range(abstract.MAX_DEPTH + 2))
    src = f"import torch\n\ndef run(model):\n    x = model.init()\n{steps}    return x\n"
    computed = collections.Counter()
    real = abstract.AbstractValues._abs_of

    def counting(self, expr, depth):
        computed[id(expr), depth] += 1
        return real(self, expr, depth)

    monkeypatch.setattr(abstract.AbstractValues, "_abs_of", counting)
    summary.summarize(ModuleAnalysis(cst.parse_module(src), src), "run.py")
    assert computed and max(computed.values()) == 1
    assert sum(computed.values()) < 2000


STORED_CRITERION = {
    "crit.py": """\
        class Crit:
            def __init__(self, opt):
                self.opt = opt

            def __call__(self, out, y):
                loss = (out - y).pow(2).mean()
                loss.backward()
                self.opt.step()
                return loss
    """,
    "trainer.py": """\
        class Trainer:
            def __init__(self, criterion):
                self.criterion = criterion

            def step(self, out, y):
                return self.criterion(out, y)
    """,
    "main.py": """\
        import torch
        from crit import Crit
        from trainer import Trainer

        def main(x, y, opt):
            trainer = Trainer(Crit(opt))
            seen = torch.zeros((), device="cuda")
            for i in range(1000):
                trainer.step(x, y)
                print(seen.item())
    """,
}


def test_a_method_that_calls_what_its_object_stores_runs_that_callee_across_modules(tmp_path, capsys):
    """`self.criterion(out, y)` in trainer.py runs Crit.__call__ (crit.py), which steps: the loop
    calling `trainer.step` is per step."""
    assert project(tmp_path, STORED_CRITERION, capsys) == {("main.py", 10, "TSL101"): 1}


def test_a_stored_callee_that_only_computes_does_not_make_its_callers_loop_per_step(tmp_path, capsys):
    files = dict(STORED_CRITERION)
    files["crit.py"] = files["crit.py"].replace("                loss.backward()\n", "").replace("                self.opt.step()\n", "")
    assert project(tmp_path, files, capsys) == {}


INHERITED_INIT = {
    "fields.py": """\
        import torch


        class Base:
            def __init__(self, x):
                self.x = x


        class Sub(Base):
            pass


        def host_fields():
            return Sub(5)


        def device_fields():
            return Sub(torch.zeros(3, device="cuda"))
    """,
    "values.py": """\
        from fields import device_fields, host_fields

        def host_value():
            return host_fields().x

        def device_value():
            return device_fields().x
    """,
    "train.py": """\
        from values import device_value, host_value

        def train(model, loader, opt):
            host = host_value()
            dev = device_value()
            for x, y in loader:
                loss = model(x).sum()
                loss.backward()
                opt.step()
                if host > 3:
                    print("host")
                if dev.sum() > 3:
                    print("device")
    """,
}


def test_an_instance_of_a_subclass_holds_what_its_own_construction_passed_to_the_inherited_init(tmp_path, capsys):
    """`Sub(5)` runs Base.__init__ with 5: its `x` is no tensor, though another `Sub(...)` got one
    (the instances cross modules, so the project view answers)."""
    assert project(tmp_path, INHERITED_INIT, capsys) == {("train.py", 12, "TSL102"): 1}


STORED_MODEL = {
    "net.py": """\
        import torch.nn.functional as F
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 1)

            def forward(self, x):
                return F.interpolate(self.conv(x), scale_factor=2)
    """,
    "show.py": """\
        def show(writer, output, step):
            writer.add_image("pred", output[0].detach().cpu(), step)
    """,
    "train.py": """\
        from net import Net
        from show import show


        class Trainer:
            def __init__(self, writer):
                self.model = Net().cuda()
                self.writer = writer

            def train(self, loader, opt):
                for i, (x, y) in enumerate(loader):
                    output = self.model(x.cuda(non_blocking=True))
                    loss = (output - y.cuda(non_blocking=True)).pow(2).mean()
                    loss.backward()
                    opt.step()
                    show(self.writer, output, i)
    """,
}


def test_the_forward_of_a_stored_device_model_stays_on_the_device_whatever_its_body_returns(tmp_path, capsys):
    """`self.model(x)` runs Net.forward, whose library result says nothing of its place: what
    train.py knew (a device model's output) is what show.py receives."""
    assert project(tmp_path, STORED_MODEL, capsys) == {("show.py", 2, "TSL101"): 1}


# -- answers do not depend on the order of the questions -------------------------------------------
CYCLES = {
    "c.py": """\
        def c(opt, loss):
            loss.backward()
            opt.step()
    """,
    "a.py": """\
        from c import c


        def a(opt, loss, n):
            if n:
                b(opt, loss, n - 1)
            c(opt, loss)


        def b(opt, loss, n):
            a(opt, loss, n)


        def f(x, n):
            if n:
                return g(x, n - 1)
            return x


        def g(y, n):
            return f(y, n)
    """,
    "main.py": """\
        import torch
        from a import f


        def main():
            return f(torch.zeros(3).cuda(), 3)
    """,
}


def _view(tmp_path: Path):
    from torchsync_lint.project.sessions import Sessions

    (tmp_path / "pyproject.toml").write_text("")
    for name, text in CYCLES.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    paths = [str(tmp_path / name) for name in CYCLES]
    return Sessions.for_files(paths, use_cache=False).session_for(paths[0]).view("a.py")


def test_answers_about_a_call_cycle_do_not_depend_on_which_was_asked_first(tmp_path):
    """`a` and `b` call each other and `a` calls the stepping `c`: both run a step whichever is
    asked first; `f` and `g` hand a device tensor round: both parameters hold it."""
    first, second = _view(tmp_path), _view(tmp_path)  # (two sessions: memos of their own)
    assert [first.function_flag("a.py:a", "step"), first.function_flag("a.py:b", "step")] == [True, True]
    assert [second.function_flag("a.py:b", "step"), second.function_flag("a.py:a", "step")] == [True, True]
    one = [first.resolve({"k": "param", "fn": "a.py:f", "i": 0}, "a.py"), first.resolve({"k": "param", "fn": "a.py:g", "i": 0}, "a.py")]
    other = [second.resolve({"k": "param", "fn": "a.py:g", "i": 0}, "a.py"), second.resolve({"k": "param", "fn": "a.py:f", "i": 0}, "a.py")]
    assert one == other[::-1] and one[0].get("k") == "device"


# -- fields a base class of this module stores ------------------------------------------------------
INHERITED_FIELDS = """\
import torch

class A:
    def __init__(self):
        self.t = torch.zeros(3).cuda()
        self.n = 0

class B(A):
    def run(self, model, loader, opt):
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
            print(self.t.sum().item())
            print(float(self.n))
"""


def test_a_field_a_base_class_of_the_module_stores_keeps_its_kind_in_the_subclass():
    """B reads `self.t` and `self.n` that A stores: the device tensor is read every step, the
    counter is a host number (silent)."""
    assert findings(INHERITED_FIELDS) == [(at(INHERITED_FIELDS, "self.t.sum().item()"), "TSL101")]


def test_a_field_stored_by_an_imported_base_of_a_local_base_keeps_its_kind(tmp_path, capsys):
    files = {
        "base.py": """\
            import torch

            class Imp:
                def __init__(self):
                    self.u = torch.zeros(3).cuda()
                    self.k = 3
        """,
        "train.py": """\
            from base import Imp

            class Mid(Imp):
                pass

            class C(Mid):
                def run(self, model, loader, opt):
                    for x, y in loader:
                        loss = model(x).sum()
                        loss.backward()
                        opt.step()
                        print(self.u.sum().item())
                        print(float(self.k))
        """,
    }
    assert project(tmp_path, files, capsys) == {("train.py", 12, "TSL101"): 1}


def test_a_parameter_named_like_a_class_of_the_module_hides_it(tmp_path):
    """`def g(Model): return Model(3)` calls what it is given, not the module's Model (the
    summary and the module analysis read a constructor call the same way)."""
    from torchsync_lint.project.sessions import Sessions

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a.py").write_text("class Model:\n    def __init__(self, n):\n        self.n = n\n\n\ndef f():\n    return Model(3)\n\n\ndef g(Model):\n    return Model(3)\n")
    summary = Sessions.for_files([str(tmp_path / "a.py")], use_cache=False).session_for(str(tmp_path / "a.py")).summary("a.py")
    assert summary["functions"]["f"]["returns"]["k"] == "instance"
    assert summary["functions"]["g"]["returns"]["k"] == "call" and summary["functions"]["g"]["returns"]["fn"] == "^a.py:g#0.__call__"
