"""The rewrites themselves: each rewritten program parses, keeps every marker exactly once,
does what its docstring says on small programs, and (a sample, slow) computes the same
RESULT as the original when the rewrite claims to preserve semantics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .harness import ROOT, FIXTURES, evaluate, fixture_paths, load, tag_locations, tag_markers
from .registry import BY_NAME, REWRITES, rewrite_of
from .rewritten import GATED, GONE, Rewritten, Source

# how many fixtures each rewrite must apply to: a rewrite that quietly stops applying tests nothing
MIN_APPLIED = {"dict_batch": 10, "gate_every_n": 10, "gate_once": 10, "move_to_module": 20, "lightning_module": 20}


@pytest.mark.parametrize("rewrite", REWRITES, ids=[r.name for r in REWRITES])
def test_rewritten_programs_parse_and_keep_each_marker_once(rewrite):
    applied = 0
    for path in fixture_paths():
        src = load(path)
        out = rewrite_of(rewrite.name, path)
        if out is None:
            continue
        applied += 1
        assert src.name in out.files
        assert out.files[src.name] != src.text or len(out.files) > 1, f"{path.name}: applied but changed nothing"
        for rel, text in out.files.items():
            compile(text, f"{path.name}:{rel}", "exec")
        where = tag_locations(out.files)
        for line, _code in src.markers:
            assert len(where.get(line, [])) == 1, f"{path.name}: the marker of line {line} is at {where.get(line)}"
        for (line, _code), want in out.expect.items():
            assert want in (GATED, GONE) and line in src.marker_lines
    assert applied >= MIN_APPLIED.get(rewrite.name, 25), f"{rewrite.name} applies to {applied} fixtures only"


def _src(code: str, name: str = "prog.py") -> Source:
    from torchsync_lint.markers import read_markers_source

    text = tag_markers(textwrap.dedent(code))
    return Source(text, name, tuple((m.line, m.code) for m in read_markers_source(text) if m.kind == "expect"))


PROGRAM = '''\
import torch
from torch.utils.data import DataLoader


def main(steps):
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(torch.randn(8, 4), batch_size=2, num_workers=0)  # expect: TSL303
    total = 0.0
    for step, x in enumerate(loader):
        if step >= steps:
            break
        x = x.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        total += loss.item()  # expect: TSL101
    return total
'''


def test_extract_passes_what_the_run_reads_and_returns_what_the_function_reads_later():
    out = BY_NAME["extract_loop_body"].apply(_src(PROGRAM)).files["prog.py"]
    assert "def _loop_body(device, model, opt, total, x):" in out
    assert "        total = _loop_body(device, model, opt, total, x)" in out
    assert "    return total\n" in out  # the helper's and main's
    assert "        if step >= steps:\n            break\n" in out  # the loop's exit stays in the loop


def test_trainers_store_the_loop_invariants_on_self():
    out = BY_NAME["trainer_class"].apply(_src(PROGRAM)).files["prog.py"]
    assert "    def __init__(self, device, loader, model, opt):" in out
    assert "enumerate(trainer.loader)" in out and "self.model(x)" in out
    base = BY_NAME["base_trainer"].apply(_src(PROGRAM)).files["prog.py"]
    assert "class Trainer(BaseTrainer):" in base and "total = trainer.fit(total)" in base


def test_config_rewrite_expects_the_configured_loader_finding_to_go():
    out = BY_NAME["config_dict"].apply(_src(PROGRAM))
    assert 'num_workers=CONFIG["num_workers"]' in out.files["prog.py"]
    assert 'pin_memory=CONFIG["pin_memory"]' in out.files["prog.py"]  # a default spelled out, then configured
    assert out.expect == {(9, "TSL303"): GONE}  # the .item() finding stays


def test_argparse_rewrite_adds_the_options_before_the_parse():
    code = PROGRAM.replace("def main(steps):\n", "def main():\n    import argparse\n    parser = argparse.ArgumentParser()\n    args = parser.parse_args()\n    steps = 3\n")
    out = BY_NAME["argparse_namespace"].apply(_src(code))
    text = out.files["prog.py"]
    assert text.index('parser.add_argument("--num_workers", type=int, default=0)') < text.index("args = parser.parse_args()")
    assert "num_workers=args.num_workers" in text
    assert set(out.expect.values()) == {GONE}


def test_gates_wrap_the_marked_statement_and_say_what_must_follow():
    every = BY_NAME["gate_every_n"].apply(_src(PROGRAM))
    assert "        if step % 10 == 0:\n            total += loss.item()" in every.files["prog.py"]
    assert every.expect == {(18, "TSL101"): GATED}
    once = BY_NAME["gate_once"].apply(_src(PROGRAM))
    assert "        if step == 0:\n            total += loss.item()" in once.files["prog.py"]
    assert once.expect == {(18, "TSL101"): GONE}


def test_renames_leave_parameters_and_attributes_alone():
    out = BY_NAME["rename_locals"].apply(_src(PROGRAM)).files["prog.py"]
    for old in ("device", "model", "opt", "loader", "total", "loss"):
        assert f"{old} =" not in out and f"{old}." not in out
    assert "def main(steps):" in out and "model.parameters" not in out and ".parameters()" in out


def test_import_aliases_rename_every_use():
    out = BY_NAME["import_aliases"].apply(_src(PROGRAM)).files["prog.py"]
    assert "import torch as T\n" in out and "from torch.utils.data import DataLoader as DL" in out
    assert "torch." not in out.replace("from torch.utils", "") and "DataLoader(" not in out


def test_dict_batch_wraps_the_dataset_and_reads_the_batch_by_key():
    code = PROGRAM.replace("DataLoader(torch.randn(8, 4)", "DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2))")
    code = code.replace("for step, x in", "for step, (x, y) in").replace("loss = model(x).sum()", "loss = (model(x) - y).sum()")
    out = BY_NAME["dict_batch"].apply(_src(code)).files["prog.py"]
    assert 'DataLoader(_DictDataset(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), ("x", "y"))' in out
    assert "for step, batch in enumerate(loader):" in out
    assert 'x = batch["x"]' in out and '(model(x) - batch["y"])' in out  # x is rebound, y only read
    assert BY_NAME["dict_batch"].apply(_src(PROGRAM)) is None  # batches of one tensor: no fields to name


def test_the_harness_sees_a_lost_finding_and_an_extra_one():
    """A 'rewrite' that breaks things on purpose: the harness must say so (it can fail)."""
    path = FIXTURES / "host_sync" / "item_accumulate.py"

    def drop_and_add(src: Source) -> Rewritten:
        text = src.text.replace("running_loss += loss.item()", "running_loss += 1.0")  # the marker comment stays
        text = text.replace("        seen += y.shape[0]\n", "        seen += y.shape[0]\n        print(loss)\n")
        return Rewritten({src.name: text})

    out = evaluate(path, drop_and_add)
    assert out.broken == ["host_sync/item_accumulate.py:40:TSL101"]
    assert out.held == ["host_sync/item_accumulate.py:41:TSL101"]
    assert [e.split("|")[1] for e in out.extra] == ["TSL103"]


SEMANTIC_SAMPLE = ["host_sync/item_accumulate.py", "input_pipeline/pipeline_baseline.py", "host_sync/helper_functions.py"]


@pytest.mark.slow
def test_semantics_preserving_rewrites_print_the_same_result(tmp_path):
    """The sample fixtures and their rewrites run in one process (run_many.py: torch imported
    once), and each rewritten program prints the RESULT line of its original."""
    scripts, names = [], []
    for fixture in SEMANTIC_SAMPLE:
        src = load(FIXTURES / fixture)
        versions = [("original", Rewritten({src.name: src.text}))]
        versions += [(r.name, rewrite_of(r.name, FIXTURES / fixture)) for r in REWRITES if r.runs]
        for name, out in versions:
            if out is None:
                continue
            where = tmp_path / name / Path(fixture).stem
            where.mkdir(parents=True)
            for rel, text in out.files.items():
                (where / rel).write_text(text)
            scripts.append(str(where / src.name))
            names.append((fixture, name))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, "-m", "tests.robustness.run_many", *scripts], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(scripts)
    original = {}
    for (fixture, name), res in zip(names, results):
        assert res["error"] is None, f"{name} of {fixture}: {res['error']}"
        if name == "original":
            original[fixture] = res["result"]
        else:
            assert res["result"] == original[fixture], f"{name} changed what {fixture} computes"
    assert len({n for _, n in names}) >= 8  # most rewrites ran on the sample
