"""A process function handed to another module's factory of an ignite engine (issue 38, misses 1):
`trainers.create_trainer(train_step, ...)` of `def create_trainer(step, ...): trainer =
Engine(step)` runs `train_step` once per batch, as `Engine(train_step)` here would (the project
summary's "engines" field says which parameters a function hands an engine). Near-misses: a
factory that does not hand its parameter to an engine, one that hands another parameter, and a
factory given something other than a function."""

from __future__ import annotations

from tests.test_objects import project

STEP = """\
    import torch
    {imports}


    def train(model, optimizer, loader):
        def train_step(engine, batch):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return {{"loss": loss.item()}}

        trainer = {call}
        trainer.run(loader, max_epochs=10)
"""


# the two blocking copies and the `.item()` of the step, found once it runs per batch
PER_BATCH = {("main.py", 8, "TSL301"): 2, ("main.py", 12, "TSL101"): 1}


def _files(factory: str, imports: str, call: str) -> dict[str, str]:
    return {"trainers.py": factory, "main.py": STEP.format(imports=imports, call=call)}


FACTORY = """\
    from ignite.engine import Engine, Events


    def create_trainer(train_step, model, optimizer):
        trainer = Engine(train_step)

        @trainer.on(Events.EPOCH_COMPLETED)
        def log(engine):
            print(engine.state.epoch)

        return trainer
"""


def test_a_step_handed_to_a_factory_of_an_engine_runs_every_batch(tmp_path, capsys):
    found = project(tmp_path, _files(FACTORY, "import trainers", "trainers.create_trainer(train_step, model, optimizer)"), capsys)
    assert found == PER_BATCH


def test_the_same_through_a_from_import_and_a_keyword_argument(tmp_path, capsys):
    found = project(tmp_path, _files(FACTORY, "from trainers import create_trainer", "create_trainer(model=model, optimizer=optimizer, train_step=train_step)"), capsys)
    assert found == PER_BATCH


def test_a_factory_method_of_a_class_counts_its_self(tmp_path, capsys):
    factory = """\
        import ignite.engine as E


        class Builder:
            def trainer(self, step):
                return E.Engine(step)
    """
    found = project(tmp_path, _files(factory, "from trainers import Builder", "Builder().trainer(train_step)"), capsys)
    assert found == PER_BATCH


def test_a_factory_that_does_not_hand_its_parameter_to_an_engine_is_silent(tmp_path, capsys):
    factory = """\
        from ignite.engine import Engine


        def create_trainer(train_step, model, optimizer):
            train_step(None, (model, optimizer))  # called once, here, not per batch
            return Engine(lambda engine, batch: None)
    """
    found = project(tmp_path, _files(factory, "import trainers", "trainers.create_trainer(train_step, model, optimizer)"), capsys)
    assert found == {}


def test_a_factory_that_hands_another_parameter_is_silent(tmp_path, capsys):
    factory = """\
        from ignite.engine import Engine


        def create_trainer(train_step, model, update):
            return Engine(update)
    """
    found = project(tmp_path, _files(factory, "import trainers", "trainers.create_trainer(train_step, model, None)"), capsys)
    assert found == {}


def test_a_factory_of_another_library_is_silent(tmp_path, capsys):
    factory = """\
        from mylib.engine import Engine


        def create_trainer(train_step, model, optimizer):
            return Engine(train_step)
    """
    found = project(tmp_path, _files(factory, "import trainers", "trainers.create_trainer(train_step, model, optimizer)"), capsys)
    assert found == {}


LOADER = """\
    from torch.utils.data import DataLoader
    import trainers


    def main(model, optimizer, dataset):
        def train_step(engine, batch):
            x, y = batch
            loss = model(x.to("cuda", non_blocking=True)).sum()
            loss.backward()

        loader = DataLoader(dataset, batch_size=64{settings})
        trainer = trainers.create_trainer(train_step, model, optimizer)
        trainer.run(loader, max_epochs=3)
"""


def test_the_loader_run_by_a_factory_made_engine_feeds_the_device(tmp_path, capsys):
    """The step the factory's engine runs copies each batch to the GPU: the loader handed to
    `trainer.run` is read every step (TSL302, TSL303), unless its settings are set."""
    found = project(tmp_path, {"trainers.py": FACTORY, "main.py": LOADER.format(settings="")}, capsys)
    assert found == {("main.py", 11, "TSL302"): 1, ("main.py", 11, "TSL303"): 1}
    assert project(tmp_path, {"trainers.py": FACTORY, "main.py": LOADER.format(settings=", num_workers=8, pin_memory=True")}, capsys) == {}
