"""The function an ignite engine runs per batch, however it reaches the engine (issue 38, misses
1 and 5): a static method handed over by its class (`Engine(Trainer.train)`), an `Engine`
subclass whose `__init__` passes its `func` to `super().__init__(func)` (also through a base
class in another module), and a factory of this module (`def make(step): return Engine(step)`).
The step copies its batch with a blocking copy (TSL301) and reads the loss (TSL101).

VALID near-misses: a class whose base is no engine passing a function to its `super().__init__`,
a subclass passing another parameter to the engine, a factory that keeps the function, and the
static method handed to something that is not an engine."""

from __future__ import annotations

import pytest

from tests.test_objects import project

STEP = """\
    @staticmethod
    def train(engine, mini_batch):
        engine.optimizer.zero_grad()
        device = next(engine.model.parameters()).device
        x = mini_batch[0].to(device)
        loss = engine.model(x).sum()
        loss.backward()
        engine.optimizer.step()
        return {"loss": float(loss / 10)}
"""

FOUND = {(5, "TSL301"): 1, (9, "TSL101"): 1}  # the lines of STEP


def _with_step(head: str, tail: str) -> tuple[str, int]:
    """``head``, the step as a method of the class ``head`` ends with, ``tail``; and the line the
    step starts on."""
    return head + STEP + "\n\n" + tail, head.count("\n")


def _lines(found, offset: int, name: str) -> dict:
    return {(line - offset, code): n for (file, line, code), n in found.items() if file == name}


ONE_MODULE = {
    "static-method": (
        "import torch\nfrom ignite.engine import Engine\n\n\nclass Steps:\n",
        "def run(model, optimizer, loader):\n    trainer = Engine(Steps.train)\n    trainer.engine_model = model\n    trainer.run(loader, max_epochs=2)\n",
    ),
    "subclass": (
        "import torch\nfrom ignite.engine import Engine\n\n\nclass MLEEngine(Engine):\n"
        "    def __init__(self, func, model, optimizer):\n        self.model = model\n        self.optimizer = optimizer\n        super().__init__(func)\n\n",
        "def run(model, optimizer, loader):\n    trainer = MLEEngine(MLEEngine.train, model, optimizer)\n    trainer.run(loader, max_epochs=2)\n",
    ),
    "factory": (
        "import torch\nfrom ignite.engine import Engine\n\n\nclass Steps:\n",
        "def make(step, name):\n    return Engine(step)\n\n\ndef run(model, optimizer, loader):\n    trainer = make(Steps.train, 'x')\n    trainer.run(loader, max_epochs=2)\n",
    ),
}


@pytest.mark.parametrize("name", list(ONE_MODULE))
def test_the_function_an_engine_runs_is_per_batch(tmp_path, capsys, name):
    text, offset = _with_step(*ONE_MODULE[name])
    found = project(tmp_path, {"train.py": text}, capsys, select="TSL301,TSL101", fields=("line", "code"))
    assert _lines(found, offset, "train.py") == FOUND, found


def test_through_a_base_engine_class_of_another_module(tmp_path, capsys):
    base = (
        "from ignite.engine import Engine\n\n\nclass MLEEngine(Engine):\n"
        "    def __init__(self, func, model, optimizer):\n        self.model = model\n        self.optimizer = optimizer\n        super().__init__(func)\n"
    )
    text, offset = _with_step(
        "import torch\nfrom base import MLEEngine\n\n\nclass LMEngine(MLEEngine):\n"
        "    def __init__(self, func, model, optimizer, flag):\n        self.flag = flag\n        super().__init__(func, model, optimizer)\n\n",
        "def run(model, optimizer, loader):\n    trainer = LMEngine(LMEngine.train, model, optimizer, True)\n    trainer.run(loader, max_epochs=2)\n",
    )
    found = project(tmp_path, {"base.py": base, "lm.py": text}, capsys, select="TSL301,TSL101")
    assert _lines(found, offset, "lm.py") == FOUND, found


NEAR_MISSES = {
    "base-is-no-engine": (
        "import threading\nimport torch\n\n\nclass Worker(threading.Thread):\n"
        "    def __init__(self, func, model):\n        self.model = model\n        super().__init__(target=func)\n\n",
        "def run(model, loader):\n    w = Worker(Worker.train, model)\n    w.start()\n",
    ),
    "subclass-hands-another-param": (
        "import torch\nfrom ignite.engine import Engine\n\n\nclass MLEEngine(Engine):\n"
        "    def __init__(self, func, model, optimizer, step):\n        self.model = model\n        self.optimizer = optimizer\n        super().__init__(step)\n\n",
        "def other(engine, batch):\n    return None\n\n\ndef run(model, optimizer, loader):\n    trainer = MLEEngine(MLEEngine.train, model, optimizer, other)\n    trainer.run(loader, max_epochs=2)\n",
    ),
    "factory-keeps-it": (
        "import torch\nfrom ignite.engine import Engine\n\n\nclass Steps:\n",
        "def make(step, name):\n    return Engine(lambda e, b: None), step\n\n\ndef run(model, optimizer, loader):\n    trainer, _ = make(Steps.train, 'x')\n    trainer.run(loader, max_epochs=2)\n",
    ),
    "handed-to-no-engine": (
        "import functools\nimport torch\n\n\nclass Steps:\n",
        "def run(model, optimizer, loader):\n    f = functools.partial(Steps.train)\n    return f\n",
    ),
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_a_function_no_engine_runs_stays_silent(tmp_path, capsys, name):
    text, _ = _with_step(*NEAR_MISSES[name])
    assert project(tmp_path, {"train.py": text}, capsys, select="TSL301,TSL101") == {}
