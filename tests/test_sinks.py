"""TSL106 (logging sinks) beyond the rule's embedded cases: the split_project repro, the sink
table's shape, and the analysis that matches calls against it."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst
import pytest

from torchsync_lint.analysis import ModuleAnalysis
from torchsync_lint.analysis.sinks import SinkAnalysis
from torchsync_lint.api import lint_file
from torchsync_lint.config import Config
from torchsync_lint.knowledge import logging_sinks

PROJECT = Path(__file__).resolve().parent / "data" / "split_project"
SRC = PROJECT / "src" / "proj"


def _expected() -> set[tuple[str, int, str]]:
    """(file, line, code) for every row of EXPECTED.md's table: `engine.py:14, 15 | TSL301`,
    `engine.py:40 | TSL301 (x2)`, `data.py:24 | TSL302, TSL303`."""
    rows = set()
    for line in (PROJECT / "EXPECTED.md").read_text().splitlines():
        m = re.match(r"\| (\w+\.py):([\d, ]+) \| ([A-Z0-9, ()x]+) \|", line)
        if m:
            for number in m.group(2).split(","):
                for code in re.findall(r"TSL\d{3}", m.group(3)):
                    rows.add((m.group(1), int(number), code))
    return rows


def _lint_alone(name: str):
    return lint_file(str(SRC / name), Config()).findings


def test_expected_md_parses():
    rows = _expected()
    assert ("train.py", 53, "TSL106") in rows and ("engine.py", 15, "TSL301") in rows and len(rows) >= 25


@pytest.mark.parametrize(("name", "line"), [("train.py", 53), ("train.py", 55), ("accel.py", 21), ("lit.py", 20)])
def test_split_project_tsl106_rows_are_reported_file_by_file(name, line):
    """The TSL106 rows that need no cross-module analysis, linting each file alone (as
    pre-commit does). engine.py:26 waits for the project view: its `writer` is a parameter."""
    assert line in [f.line for f in _lint_alone(name) if f.code == "TSL106"]


@pytest.mark.parametrize("name", sorted(p.name for p in SRC.glob("*.py")))
def test_split_project_nothing_unexpected(name):
    """Linting each file alone reports only rows of EXPECTED.md (the cross-module ones may be
    missing until the project view reaches them, but nothing outside the table appears)."""
    expected = _expected()
    unexpected = [(f.line, f.code) for f in _lint_alone(name) if (name, f.line, f.code) not in expected]
    assert unexpected == []


def test_split_project_tsl106_messages_say_where_the_library_reads():
    messages = {(f.line, f.message) for name in ("train.py", "accel.py", "lit.py") for f in _lint_alone(name) if f.code == "TSL106"}
    text = " ".join(m for _, m in messages)
    assert "make_np" in text and "wandb calls `.item()`" in text and "trackers" in text and "progress bar" in text


def test_prepared_loader_yields_device_batches():
    """accel.py:22's `loss.item()` is a TSL101 because the loader came out of
    `accelerator.prepare`, which moves every batch to the device."""
    assert 22 in [f.line for f in _lint_alone("accel.py") if f.code == "TSL101"]


# -- the table ---------------------------------------------------------------------------------
def test_every_sink_row_is_recognisable_and_says_where_it_reads():
    for sink in logging_sinks.SINKS:
        assert bool(sink.functions) != bool(sink.methods), sink  # a function, or a method of a made object
        assert not sink.methods or sink.makers, sink
        assert sink.reads and sink.where.endswith("on it"), sink
        for qualname in (*sink.functions, *sink.makers):
            assert re.fullmatch(r"[A-Za-z_][\w.]*", qualname), qualname


def test_knowledge_package_is_data_only():
    """`knowledge/` holds tables; the lint path imports it, so it must not import torch (nor
    libcst: tables are plain data, the analysis reads them)."""
    package = Path(logging_sinks.__file__).parent
    for path in package.glob("*.py"):
        source = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(torch|libcst)\b", source, re.M), path.name


# -- the analysis ------------------------------------------------------------------------------
def _reads(source: str) -> dict[int, list[str]]:
    module = cst.parse_module(source)
    analysis = ModuleAnalysis(module, source)
    sinks = SinkAnalysis(analysis)
    out: dict[int, list[str]] = {}
    for call in analysis.index.calls:
        reads = sinks.host_reads(call)
        if reads:
            out[analysis.positions[call].start.line] = [module.code_for_node(r.expr) for r in reads]
    return out


def test_host_reads_pick_the_arguments_the_library_reads():
    source = (
        "import torch\nimport wandb\nfrom torch.utils.tensorboard import SummaryWriter\nfrom tqdm import tqdm\n"
        "w = SummaryWriter()\n"
        "w.add_scalar('tag', a, 3)\n"  # 6: the value, not the tag or the step
        "w.add_scalar(tag='t', global_step=1, scalar_value=b)\n"  # 7: by keyword
        "wandb.log({'x': c, 'y': d}, step=2)\n"  # 8: each value of a dict literal
        "wandb.log(metrics)\n"  # 9: a dict held in a name: the name itself
        "p = tqdm(range(3))\n"
        "p.set_postfix({'k': e}, refresh=False, f=f)\n"  # 11: ordered_dict values and **kwargs, not refresh
        "w.add_text('tag', g)\n"  # 12: not a sink method
        "other.add_scalar('tag', h)\n"  # 13: unknown receiver
        "wandb.log(*args)\n"  # 14: positions unknown
    )
    assert _reads(source) == {6: ["a"], 7: ["b"], 8: ["c", "d"], 9: ["metrics"], 11: ["e", "f"]}


def test_receiver_through_getters_subscripts_and_reassignment():
    source = (
        "import neptune\nfrom clearml import Task\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "run = neptune.init_run()\n"
        "run['loss'].append(a)\n"  # 5
        "log = Task.init(project_name='p').get_logger()\n"
        "log.report_scalar('t', 's', b, 0)\n"  # 7
        "w = SummaryWriter()\n"
        "if flag:\n    w = make_writer()\n"
        "w.add_scalar('t', c)\n"  # 11: two origins that disagree: unknown
        "run.append(d)\n"  # 12: the run itself, not a field of it
    )
    assert _reads(source) == {5: ["a"], 7: ["b"]}


def test_accelerate_needs_trackers():
    source = (
        "from accelerate import Accelerator\n"
        "a = Accelerator(log_with='wandb')\nb = Accelerator()\nc = Accelerator(log_with=None)\nd = Accelerator(**kw)\ne = Accelerator(log_with=cfg.report_to)\n"
        "a.log({'l': x})\nb.log({'l': x})\nc.log({'l': x})\nd.log({'l': x})\ne.log({'l': x})\n"
    )
    assert _reads(source) == {7: ["x"], 11: ["x"]}


def test_split_project_lazy_logging_says_it_syncs_when_the_level_is_enabled():
    """engine.py:30, `logger.info("... %s", loss)`: TSL103, with the lazy-argument message."""
    (finding,) = [f for f in _lint_alone("engine.py") if f.code == "TSL103"]
    assert finding.line == 30 and "syncs when this level is enabled" in finding.message and "gated" in finding.message


_LIT_MODULE = '''\
import lightning as L
import torch
import torch.nn.functional as F


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train/loss", loss)
        return loss
'''


@pytest.mark.parametrize(
    "trainer, found",
    [
        ("L.Trainer(max_steps=5, logger=False)", False),  # no logger: nothing reads the value
        ("L.Trainer(max_steps=5, logger=CFG['logger'])", False),  # configured: unknown
        ("L.Trainer(max_steps=5)", True),  # Lightning's default logger, every log_every_n_steps
        ("L.Trainer(logger=L.pytorch.loggers.CSVLogger('logs'))", True),
    ],
)
def test_trainer_logger_of_another_module(tmp_path, trainer, found):
    """A LightningModule fitted by a Trainer another module builds gets that Trainer's logger
    answer, as it does when both are in one module."""
    from torchsync_lint.api import lint_paths

    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (tmp_path / "model.py").write_text(_LIT_MODULE)
    (tmp_path / "train.py").write_text(
        "import json\n\nimport lightning as L\n\nfrom model import Classifier\n\nCFG = json.load(open('cfg.json'))\n"
        f"trainer = {trainer}\ntrainer.fit(Classifier())\n"
    )
    results = {Path(r.path).name: r for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    codes = [(f.line, f.code) for f in results["model.py"].findings]
    assert codes == ([(14, "TSL106")] if found else [])
    # the one-file run of the module gives the same answer
    alone = lint_file(str(tmp_path / "model.py"), Config()).findings
    assert [(f.line, f.code) for f in alone] == codes
