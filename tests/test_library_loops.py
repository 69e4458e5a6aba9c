"""Loops a library builds (issue 38, misses 1): pytorch-ignite's engines run the loader handed
to `engine.run(loader)` a step per batch and the handlers of per-step events every iteration;
HF `Trainer` builds its loaders from `TrainingArguments` (knowledge/ignite.py,
knowledge/transformers.py). Each with near-misses that stay silent."""

from __future__ import annotations

import textwrap

import pytest

from tests._apply_fixes import apply_fixes
from tests.test_objects import RULES, at, findings, project
from torchsync_lint.types import Applicability
from torchsync_lint.engine import lint_source

# -- ignite: loaders handed to `engine.run` -------------------------------------------------------
FACTORY = """\
    import torch
    from torch.utils.data import DataLoader
    {imports}


    def main(model, opt, loss_fn, dataset):
        loader = DataLoader(dataset, batch_size=64, shuffle=True{settings})
        trainer = {factory}
        trainer.run(loader, max_epochs=10)
"""


@pytest.mark.parametrize(
    ("imports", "factory"),
    [
        ("from ignite.engine import create_supervised_trainer", 'create_supervised_trainer(model, opt, loss_fn, device="cuda")'),
        ("import ignite.engine as E", 'E.create_supervised_trainer(model, opt, loss_fn, torch.device("cuda"))'),
        ("import ignite", 'ignite.engine.create_supervised_evaluator(model, metrics={}, device="cuda:0")'),
    ],
)
def test_a_loader_run_by_an_engine_that_moves_batches_to_the_gpu_is_checked(imports, factory):
    """`create_supervised_trainer(..., device="cuda")` copies every batch of the loader given
    to `trainer.run(loader)` to the GPU: the loader's settings are per step (TSL302, TSL303)."""
    source = FACTORY.format(imports=imports, factory=factory, settings="")
    line = at(source, "DataLoader(dataset")
    assert findings(source) == [(line, "TSL302"), (line, "TSL303")]


@pytest.mark.parametrize(
    ("factory", "settings"),
    [
        ('create_supervised_trainer(model, opt, loss_fn, device="cuda")', ", num_workers=4, pin_memory=True"),  # set
        ("create_supervised_trainer(model, opt, loss_fn)", ""),  # device=None: ignite moves nothing
        ('create_supervised_trainer(model, opt, loss_fn, device="cpu")', ""),  # a CPU run
        ("create_supervised_trainer(model, opt, loss_fn, device=args.device)", ", num_workers=args.workers, pin_memory=args.pin"),  # configured
    ],
)
def test_a_loader_run_by_an_engine_stays_silent_when_set_or_on_the_cpu(factory, settings):
    source = FACTORY.format(imports="from ignite.engine import create_supervised_trainer", factory=factory, settings=settings)
    assert findings(source) == []


def test_a_loader_run_by_another_librarys_engine_is_not_known_to_feed_the_gpu():
    source = FACTORY.format(imports="from mylib.engine import create_supervised_trainer", factory='create_supervised_trainer(model, opt, loss_fn, device="cuda")', settings="")
    assert findings(source) == []


PROCESS = """\
    import torch
    from torch.utils.data import DataLoader
    from ignite.engine import Engine, Events


    def loaders(ds):
        return DataLoader(ds, batch_size=8, shuffle=True), DataLoader(ds, batch_size=8)


    def train(args, model, optimizer, ds):
        model.to({device})
        train_loader, val_loader = loaders(ds)

        def update(engine, batch):
            batch = tuple(t.to({device}, non_blocking=True) for t in batch)
            loss = model(*batch)
            loss.backward()
            optimizer.step()

        def inference(engine, batch):
            with torch.no_grad():
                return model(*tuple(t.to({device}, non_blocking=True) for t in batch))

        trainer, evaluator = Engine(update), Engine(inference)
        trainer.add_event_handler(Events.EPOCH_COMPLETED, lambda _: evaluator.run(val_loader))
        trainer.run(train_loader, max_epochs=args.n_epochs)
"""


@pytest.mark.parametrize(("device", "flagged"), [('"cuda"', True), ('"cpu"', False)])
def test_loaders_run_by_an_engine_whose_process_function_copies_to_the_gpu(device, flagged):
    """`Engine(update)` with `update` copying each batch to the GPU: both loaders it (and the
    evaluator, run from a handler) iterate feed the GPU. Copies to the CPU feed nothing."""
    source = PROCESS.format(device=device)
    line = at(source, "return DataLoader")
    assert findings(source) == ([(line, "TSL302"), (line, "TSL302"), (line, "TSL303"), (line, "TSL303")] if flagged else [])


def test_a_loader_of_another_module_run_by_an_engine_is_checked_there(tmp_path, capsys):
    files = {
        "data.py": "from torch.utils.data import DataLoader\n\n\ndef make_loader(ds):\n    return DataLoader(ds, batch_size=32, shuffle=True)\n",
        "train.py": (
            "from ignite.engine import create_supervised_trainer\nfrom data import make_loader\n\n\n"
            "def main(model, opt, loss_fn, ds, device):\n"
            "    trainer = create_supervised_trainer(model, opt, loss_fn, device={device})\n"
            "    trainer.run(make_loader(ds), max_epochs=2)\n"
        ),
    }
    found = project(tmp_path, {**files, "train.py": files["train.py"].format(device='"cuda"')}, capsys)
    assert found == {("data.py", 5, "TSL302"): 1, ("data.py", 5, "TSL303"): 1}
    assert project(tmp_path, {**files, "train.py": files["train.py"].format(device="None")}, capsys) == {}


# -- ignite: handlers of per-step events ----------------------------------------------------------
HANDLERS = """\
    import torch
    {imports}


    def main(model, loader, opt, loss_fn):
        trainer = create_supervised_trainer(model, opt, loss_fn, device="cuda")
        scale = torch.ones(3, device="cuda")

        {register}
        def handler(engine):
            print(scale.sum().item())

        {after}
        trainer.run(loader, max_epochs=3)
"""
_FROM = "from ignite.engine import Events, create_supervised_trainer"
_MODULE = "import ignite.engine as E\ncreate_supervised_trainer = E.create_supervised_trainer\nEvents = E.Events"


@pytest.mark.parametrize(
    ("imports", "register", "after", "gated"),
    [
        (_FROM, "@trainer.on(Events.ITERATION_COMPLETED)", "", False),
        (_FROM, "", "trainer.add_event_handler(Events.ITERATION_STARTED, handler)", False),
        (_FROM, "", "trainer.add_event_handler(Events.GET_BATCH_COMPLETED | Events.COMPLETED, handler)", False),
        (_FROM, "@trainer.on(Events.ITERATION_COMPLETED(every=50))", "", True),
        (_MODULE, "", "trainer.add_event_handler(E.Events.ITERATION_COMPLETED(every=10), handler)", True),
        ("import ignite\nfrom ignite.engine import create_supervised_trainer", "@trainer.on(ignite.engine.Events.ITERATION_COMPLETED)", "", False),
    ],
)
def test_a_handler_of_a_per_step_event_runs_every_iteration(imports, register, after, gated):
    """`@trainer.on(Events.ITERATION_COMPLETED)` / `add_event_handler(...)`: the handler runs
    every step, so its `.item()` is a per-step sync; `every=N` gates it (the message says so)."""
    source = textwrap.dedent(HANDLERS).format(imports=imports, register=register, after=after)
    line = at(source, "scale.sum().item()")
    found = [f for f in _lint(source) if f.code < "TSL9"]
    assert [(f.line, f.code) for f in found] == [(line, "TSL101")]
    assert ("gated by `" in found[0].message) == gated
    if gated:
        assert "every=" in found[0].message


@pytest.mark.parametrize(
    ("imports", "register", "after"),
    [
        (_FROM, "@trainer.on(Events.EPOCH_COMPLETED)", ""),  # once per epoch
        (_FROM, "", "trainer.add_event_handler(Events.COMPLETED, handler)"),
        (_FROM, "@trainer.on(Events.ITERATION_COMPLETED(once=100))", ""),  # once in the run
        (_FROM, "@trainer.on(Events.ITERATION_COMPLETED(before=5))", ""),  # the first 5 steps
        (_FROM, "@trainer.on(Events.ITERATION_COMPLETED(event_filter=lambda e, i: i in marks))", ""),  # the user says
        ("from mylib import Events\nfrom ignite.engine import create_supervised_trainer", "@trainer.on(Events.ITERATION_COMPLETED)", ""),  # another library's events
        (_FROM, "", "trainer.add_event_handler(Events.EPOCH_STARTED, handler)"),
    ],
)
def test_a_handler_of_an_epoch_or_bounded_event_is_not_per_step(imports, register, after):
    source = textwrap.dedent(HANDLERS).format(imports=imports, register=register, after=after)
    assert findings(source) == []


def _lint(source: str):
    return lint_source(textwrap.dedent(source), "t.py", RULES)


# -- HF Trainer: the loaders it builds from TrainingArguments -------------------------------------
TRAINER = """\
    {imports}


    def main(model, ds, cfg):
        {build}
        trainer.train()
"""
_HF = "from transformers import Trainer, TrainingArguments"


@pytest.mark.parametrize(
    ("imports", "build", "codes"),
    [
        (_HF, 'args = TrainingArguments(output_dir="out", per_device_train_batch_size=16)\n    trainer = Trainer(model=model, args=args, train_dataset=ds)', ["TSL303"]),
        ("import transformers", 'trainer = transformers.Trainer(model, transformers.TrainingArguments("out"), None, ds)', ["TSL303"]),
        (_HF, 'settings = dict(output_dir="out", dataloader_pin_memory=False)\n    trainer = Trainer(model=model, args=TrainingArguments(**settings), eval_dataset=ds)', ["TSL302", "TSL303"]),
        (_HF, 'settings = {"output_dir": "out", "dataloader_num_workers": 0}\n    trainer = Trainer(model=model, args=TrainingArguments(**settings), train_dataset=ds)', ["TSL303"]),
        ("from transformers.trainer_seq2seq import Seq2SeqTrainer as S2S\nfrom transformers import Seq2SeqTrainingArguments", 'trainer = S2S(model=model, args=Seq2SeqTrainingArguments("o", dataloader_num_workers=0), train_dataset=ds)', ["TSL303"]),
    ],
)
def test_a_trainer_builds_a_main_process_loader_from_default_arguments(imports, build, codes):
    """transformers 5.23's `TrainingArguments` default `dataloader_num_workers` to 0 (and
    `dataloader_pin_memory` to True): a `Trainer` given a dataset and arguments that leave the
    workers unset loads every batch in the training process. Reported where the arguments are
    built, the fix writing the Trainer's keyword."""
    source = textwrap.dedent(TRAINER).format(imports=imports, build=build)
    line = at(source, "TrainingArguments(")
    found = [f for f in lint_source(source, "t.py", RULES) if f.code < "TSL9"]
    assert [(f.line, f.code) for f in found] == [(line, c) for c in codes]
    assert all("`dataloader_" in f.message and "Trainer" in f.message for f in found)
    fixed = apply_fixes(source, found, Applicability.UNSAFE)
    assert findings(fixed) == []  # the fix writes the Trainer's own keywords (or the dict's values)
    assert "min(8, os.cpu_count() or 1)" in fixed and "dataloader_num_workers" in fixed


@pytest.mark.parametrize(
    "build",
    [
        "trainer = Trainer(model=model, train_dataset=ds)",
        'kwargs = {"model": model, "train_dataset": ds}\n    trainer = Trainer(**kwargs)',  # a dict of the Trainer's arguments
        "trainer = Trainer(model, None, None, ds)",
    ],
)
def test_a_trainer_given_no_arguments_runs_with_the_defaults(build):
    source = textwrap.dedent(TRAINER).format(imports=_HF, build=build)
    found = [f for f in lint_source(source, "t.py", RULES) if f.code < "TSL9"]
    assert [(f.line, f.code) for f in found] == [(at(source, "trainer = Trainer("), "TSL303")]
    assert found[0].fix is None and "TrainingArguments(...)" in found[0].message


@pytest.mark.parametrize(
    ("imports", "build"),
    [
        (_HF, 'trainer = Trainer(model=model, args=TrainingArguments("out", dataloader_num_workers=4), train_dataset=ds)'),  # set
        (_HF + "\nfrom transformers import HfArgumentParser", "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n    trainer = Trainer(model=model, args=args, train_dataset=ds)"),  # the command line
        (_HF, "trainer = Trainer(model=model, args=TrainingArguments(**cfg), train_dataset=ds)"),  # unknown contents
        (_HF, 'settings = dict(output_dir="o")\n    settings.update(cfg)\n    trainer = Trainer(model=model, args=TrainingArguments(**settings), train_dataset=ds)'),  # changed
        (_HF, 'args = TrainingArguments("o")\n    args.dataloader_num_workers = cfg.workers\n    trainer = Trainer(model=model, args=args, train_dataset=ds)'),  # set later
        (_HF, 'trainer = Trainer(model=model, args=TrainingArguments("o", use_cpu=True), train_dataset=ds)'),  # a CPU run
        (_HF, 'trainer = Trainer(model=model, args=TrainingArguments("o"))'),  # no dataset here
        (_HF, "trainer = Trainer(**cfg)"),  # the Trainer's arguments are configured
        (_HF + "\nfrom torch.utils.data import TensorDataset", 'trainer = Trainer(model=model, args=TrainingArguments("o"), train_dataset=TensorDataset(ds, ds))'),  # in memory
        ("from mylib import Trainer, TrainingArguments", 'trainer = Trainer(model=model, args=TrainingArguments("o"), train_dataset=ds)'),  # another library
        (_HF + "\n\n\nclass Own(Trainer):\n    def get_train_dataloader(self):\n        return self.loader", 'trainer = Own(model=model, args=TrainingArguments("o"), train_dataset=ds)'),  # its own loaders
    ],
)
def test_a_trainer_whose_workers_are_set_configured_or_unknown_is_silent(imports, build):
    source = textwrap.dedent(TRAINER).format(imports=imports, build=build)
    assert findings(source) == []


# -- HF Trainer: the methods it calls per batch ---------------------------------------------------
HOOK = """\
    {imports}


    class CLTrainer({base}):
        def {method}(self, model, inputs, *rest):
            {body}
            return model(**inputs).loss
"""


@pytest.mark.parametrize(
    ("imports", "base", "method", "body", "code"),
    [
        ("from transformers import Trainer", "Trainer", "compute_loss", 'print(inputs["labels"].sum().item())', "TSL101"),
        ("import transformers", "transformers.Trainer", "compute_loss", 'if inputs["mask"].any():\n                pass', "TSL102"),
        ("from transformers.trainer import Trainer as HFTrainer", "HFTrainer", "training_step", "scale = torch.ones(2, device='cuda').max().item()", "TSL101"),
    ],
)
def test_a_trainer_subclass_hook_runs_every_step(imports, base, method, body, code):
    """The Trainer calls `training_step` every step and `compute_loss` with the batch already on
    the device: their reads are per-step syncs."""
    source = textwrap.dedent(HOOK).format(imports="import torch\n" + imports, base=base, method=method, body=body)
    assert [c for _, c in findings(source)] == [code]


@pytest.mark.parametrize(
    ("imports", "base", "method"),
    [
        ("from transformers import Trainer", "Trainer", "evaluate_once"),  # not a hook
        ("from mylib import Trainer", "Trainer", "compute_loss"),  # another library's trainer
        ("import torch", "object", "compute_loss"),
    ],
)
def test_a_method_the_trainer_does_not_call_per_step_is_silent(imports, base, method):
    source = textwrap.dedent(HOOK).format(imports="import torch\n" + imports, base=base, method=method, body='print(inputs["labels"].sum().item())')
    assert findings(source) == []


ENGINE_FACTORY = """\
    import torch
    from ignite.engine import Engine


    def create_trainer(model, optimizer, loss_fn, device=None):
        def _update(engine, batch):
            img, target = batch
            img = img.to({where}, non_blocking=True)
            loss = loss_fn(model(img), target.to({where}, non_blocking=True))
            loss.backward()
            optimizer.step()
        return Engine(_update)


    def do_train(model, train_loader, optimizer, loss_fn, device):
        trainer = create_trainer(model, optimizer, loss_fn, device=device)
        trainer.run(train_loader, max_epochs=10)
"""


@pytest.mark.parametrize(("where", "flagged"), [("device", True), ('"cpu"', False)])
def test_an_engine_a_project_factory_returns_feeds_the_loaders_of_its_callers(tmp_path, capsys, where, flagged):
    """`create_trainer(...)` of the project returns `Engine(_update)`, whose process function
    copies each batch to the device: the loader that another module builds and hands to
    `do_train` feeds the GPU (reid-strong-baseline's layout)."""
    files = {
        "engine.py": ENGINE_FACTORY.format(where=where),
        "data.py": "from torch.utils.data import DataLoader\n\n\ndef make_loader(ds):\n    return DataLoader(ds, batch_size=32, num_workers=4)\n",
        "main.py": "from data import make_loader\nfrom engine import do_train\n\n\ndef main(model, ds, opt, loss_fn):\n    do_train(model.cuda(), make_loader(ds), opt, loss_fn, 'cuda')\n",
    }
    assert project(tmp_path, files, capsys) == ({("data.py", 5, "TSL302"): 1} if flagged else {})


# -- HF Trainer: the model it runs every step -----------------------------------------------------
MODELS = """\
    import torch
    from transformers import BertPreTrainedModel


    class ForCL(BertPreTrainedModel):
        def forward(self, input_ids=None, labels=None):
            scores = self.score(input_ids)
            target = torch.arange(scores.size(0)).long().to(self.device)
            return self.loss(scores, target)
"""
TRAINERS = """\
    from transformers import Trainer


    class CLTrainer(Trainer):
        pass
"""


@pytest.mark.parametrize(
    ("imports", "build", "flagged"),
    [
        ("from transformers import Trainer", "Trainer(model=model, args=args, train_dataset=ds).train()", True),
        ("from trainers import CLTrainer", "CLTrainer(model=model, args=args, train_dataset=ds).train()", True),
        ("from trainers import CLTrainer", "CLTrainer(model, args, None, ds).train()", True),
        ("from trainers import CLTrainer", "model.save_pretrained('out')", False),  # not trained by a Trainer here
        ("from mylib import Trainer", "Trainer(model=model, args=args, train_dataset=ds).train()", False),  # another library's
    ],
)
def test_a_model_handed_to_an_hf_trainer_runs_its_forward_every_step(tmp_path, capsys, imports, build, flagged):
    """The Trainer's `training_step` calls the model it was given once per batch: the forward of
    that project class is per-step code (simcse's `BertForCL`: its contrastive labels are built
    on the host and copied every step)."""
    train = f"from models import ForCL\n{imports}\n\n\ndef main(path, args, ds):\n    model = ForCL.from_pretrained(path)\n    {build}\n"
    found = project(tmp_path, {"models.py": MODELS, "trainers.py": TRAINERS, "train.py": train}, capsys)
    assert found == ({("models.py", 8, "TSL305"): 1} if flagged else {})
