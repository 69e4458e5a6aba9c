"""An ignite `Engine` subclass handed around as a value and built with its own process function
(issue 38's class of misses "a class handed around as a value then instantiated"): a trainer
stores the class (`SingleTrainer(MLEEngine, cfg)`, `self.engine_class = engine_class`) and calls
`self.engine_class(self.engine_class.train, ...)`; a builder function takes the class as a
parameter (`build(MLEEngine)` of `def build(cls): return cls(cls.train, ...)`); a subclass in a
third module inherits the `__init__`. The step then runs per batch: its blocking copy (TSL301)
and its read (TSL101) are found. VALID near-misses: the class stored but never built; a static
method of it never handed to the engine."""

from __future__ import annotations

import pytest

from tests.test_objects import project

ENGINES = '''
import torch
from ignite.engine import Engine


class MLEEngine(Engine):
    def __init__(self, func, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        super().__init__(func)

    @staticmethod
    def train(engine, mini_batch):
        engine.optimizer.zero_grad()
        device = next(engine.model.parameters()).device
        x = mini_batch[0].to(device)
        loss = engine.model(x).sum()
        loss.backward()
        engine.optimizer.step()
        return {"loss": float(loss / 10)}

    @staticmethod
    def attach(engine, mini_batch):
        device = next(engine.model.parameters()).device
        return mini_batch[0].to(device)
'''

STEP_LINES = {("engines.py", 16, "TSL301"), ("engines.py", 20, "TSL101")}

TRAINERS = {
    "stored": '''
class SingleTrainer:
    def __init__(self, engine_class, config):
        self.engine_class = engine_class
        self.config = config

    def train(self, model, optimizer, loader):
        engine = self.engine_class(self.engine_class.train, model, optimizer)
        engine.run(loader, max_epochs=2)
''',
    "parameter": '''
def build(cls, model, optimizer):
    return cls(cls.train, model, optimizer)


class SingleTrainer:
    def __init__(self, engine_class, config):
        self.engine_class = engine_class

    def train(self, model, optimizer, loader):
        build(self.engine_class, model, optimizer).run(loader, max_epochs=2)
''',
}

MAIN = '''
import torch
from engines import MLEEngine
from trainers import SingleTrainer


def main(model, loader):
    model.cuda()
    optimizer = torch.optim.Adam(model.parameters())
    SingleTrainer(MLEEngine, {}).train(model, optimizer, loader)
'''


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_engine_class_handed_around(tmp_path, capsys, trainer):
    files = {"engines.py": ENGINES, "trainers.py": TRAINERS[trainer], "main.py": MAIN}
    found = {k for k in project(tmp_path, files, capsys, select="TSL101,TSL301") if k[0] == "engines.py"}
    assert found == STEP_LINES  # not `attach` (line 25): never handed to an engine


def test_subclass_in_a_third_module(tmp_path, capsys):
    sub = "from engines import MLEEngine\n\n\nclass RLEngine(MLEEngine):\n    @staticmethod\n    def train(engine, mini_batch):\n        x = mini_batch[0].cuda()\n        loss = engine.model(x).sum()\n        return float(loss)\n"
    main = MAIN.replace("from engines import MLEEngine", "from rl import RLEngine").replace("SingleTrainer(MLEEngine", "SingleTrainer(RLEngine")
    files = {"engines.py": ENGINES, "rl.py": sub, "trainers.py": TRAINERS["stored"], "main.py": main}
    found = {k for k in project(tmp_path, files, capsys, select="TSL101,TSL301")}
    # the subclass's own step runs per batch (its copy is found), the base's `train` is not run
    assert ("rl.py", 7, "TSL301") in found and not {k for k in found if k[0] == "engines.py"}


def test_valid_class_stored_never_built(tmp_path, capsys):
    trainer = "class SingleTrainer:\n    def __init__(self, engine_class, config):\n        self.engine_class = engine_class\n\n    def name(self):\n        return self.engine_class.__name__\n"
    files = {"engines.py": ENGINES, "trainers.py": trainer, "main.py": MAIN.replace(".train(model, optimizer, loader)", ".name()")}
    assert set(project(tmp_path, files, capsys, select="TSL101,TSL301")) == set()


NORM = '''
def param_norm(parameters):
    total = 0
    for p in parameters:
        total += (p.data ** 2).sum()
    return total
'''


@pytest.mark.parametrize(("move", "expected"), [(".cuda()", {("engines.py", 21, "TSL101")}), ("", set())], ids=["device-model", "cpu-model"])
def test_the_engine_a_step_is_handed_holds_the_trainer_s_model(tmp_path, capsys, move, expected):
    # `engine` (the step's first parameter) is the engine object built with the model: a norm of
    # its device parameters, read with float() every step
    engines = ENGINES.replace("from ignite.engine import Engine\n", "from ignite.engine import Engine\nfrom norms import param_norm\n").replace(
        '        return {"loss": float(loss / 10)}', '        norm = float(param_norm(engine.model.parameters()))\n        return {"loss": float(loss / 10)}'
    )
    main = MAIN.replace("    model.cuda()\n", f"    model = model{move}\n" if move else "")
    files = {"engines.py": engines, "norms.py": NORM, "trainers.py": TRAINERS["stored"], "main.py": main}
    found = {k for k in project(tmp_path, files, capsys, select="TSL101") if k[0] == "engines.py" and k[1] == 21}
    assert found == expected
