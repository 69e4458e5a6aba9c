"""Lint-path performance, as ratios measured in one run (issue 17, and issue 12's project view).

Timings on shared 2-core machines are noisy: every number is a median of ``--repeats`` runs,
and each is reported next to the baseline measured in the same run (the libcst parse of the
same files, a bare `python -c "import libcst"`, the same work without the project view).

    python benchmarks/bench_lint.py [--repeats 5] [--corpus DIR ...] [--json]

``--corpus`` adds directories of training scripts (the realworld corpora, fetched as
benchmarks/realworld*/SOURCES.md says) to the fixtures. Not part of the test suite.

What it reports:
1. `check -j 1 --no-cache` over the files vs `import libcst` + parsing them, both end to end in
   a fresh interpreter, and the same ratio in-process (the engine alone);
2. TorchFix's flake8 run over the same files, when TorchFix is installed;
3. `-j 2` vs `-j 1`;
4. the cold run of a project tree vs the cached re-run, and the re-run after one file is edited
   (and how many files that re-linted);
5. one small file end to end, vs `python -c pass` and `python -c "import libcst"`;
6. the project view: one file of a 50-module project vs the same file alone, and the whole
   tree with the project view vs module by module without it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
LINT = [PY, "-m", "torchsync_lint", "check", "-q", "--exit-zero"]
SMALL_FILE = ROOT / "fixtures" / "host_sync" / "item_accumulate.py"


# As a user's shell runs it: bytecode is written and reused (a sandbox that sets
# PYTHONDONTWRITEBYTECODE would time the compilation of our modules on every run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd or ROOT, capture_output=True, check=False, env=env or ENV)
    return time.perf_counter() - t0


def median_wall(cmd: list[str], repeats: int, cwd: Path | None = None) -> float:
    return statistics.median(wall(cmd, cwd) for _ in range(repeats))


def python_files(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py") if ".torchsync_cache" not in p.parts)


_PARSE_SCRIPT = """
import sys, libcst
for path in sys.argv[1:]:
    try:
        libcst.parse_module(open(path, encoding="utf-8", errors="surrogateescape").read())
    except Exception:
        pass
"""


# -- 1. the engine against the parser -------------------------------------------------------------
def engine_vs_parse(dirs: list[Path], repeats: int) -> dict:
    files = python_files(dirs)
    lines = sum(p.read_text(encoding="utf-8", errors="replace").count("\n") for p in files)
    check, parse = [], []
    for _ in range(repeats):  # alternated, so that load drifts hit both alike
        check.append(wall([*LINT, "--no-cache", "-j", "1", *map(str, dirs)]))
        parse.append(wall([PY, "-c", _PARSE_SCRIPT, *map(str, files)]))
    in_process = _in_process_ratio(files, repeats)
    c, p = statistics.median(check), statistics.median(parse)
    return {"files": len(files), "lines": lines, "check_s": c, "parse_s": p, "ratio": c / p,
            "check_lines_per_s": lines / c, "in_process": in_process}


def _in_process_ratio(files: list[Path], repeats: int) -> dict:
    import libcst

    from torchsync_lint.engine import lint_source
    from torchsync_lint.rule import load_rules

    sources = [(str(p), p.read_text(encoding="utf-8", errors="surrogateescape")) for p in files]
    codes = {c for c, r in load_rules().items() if r.default_enabled}
    parse, lint = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _path, text in sources:
            try:
                libcst.parse_module(text)
            except Exception:  # noqa: BLE001 - a syntax-error fixture
                pass
        parse.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for path, text in sources:
            lint_source(text, path, codes, {})
        lint.append(time.perf_counter() - t0)
    p, l = statistics.median(parse), statistics.median(lint)
    return {"parse_s": p, "lint_s": l, "ratio": l / p}


# -- 2. TorchFix ----------------------------------------------------------------------------------
def torchfix(dirs: list[Path], repeats: int) -> dict | None:
    probe = subprocess.run([PY, "-c", "import torchfix"], capture_output=True, check=False)
    if probe.returncode != 0:
        return None
    cmd = [PY, "-m", "flake8", "--select", "TOR", "-j", "1", *map(str, dirs)]
    ours = [*LINT, "--no-cache", "-j", "1", *map(str, dirs)]
    theirs, mine = [], []
    for _ in range(repeats):
        theirs.append(wall(cmd))
        mine.append(wall(ours))
    t, m = statistics.median(theirs), statistics.median(mine)
    return {"torchfix_s": t, "check_s": m, "speedup": t / m}


# -- 3 and 4: parallel runs and the cache ------------------------------------------------------------
def project_copy(dirs: list[Path], into: Path) -> Path:
    """The trees as one project (a pyproject.toml marks it, so the cache is used)."""
    tree = into / "project"
    tree.mkdir()
    (tree / "pyproject.toml").write_text('[project]\nname = "bench"\n')
    for i, d in enumerate(dirs):
        shutil.copytree(d, tree / f"t{i}_{d.name}", ignore=shutil.ignore_patterns(".torchsync_cache", "__pycache__"))
    return tree


def jobs_scaling(tree: Path, repeats: int) -> dict:
    one, two = [], []
    for _ in range(repeats):
        one.append(wall([*LINT, "--no-cache", "-j", "1", "."], cwd=tree))
        two.append(wall([*LINT, "--no-cache", "-j", "2", "."], cwd=tree))
    a, b = statistics.median(one), statistics.median(two)
    return {"j1_s": a, "j2_s": b, "speedup": a / b}


def cache_runs(tree: Path, repeats: int) -> dict:
    cache = tree / ".torchsync_cache"
    cold, warm, edited, relinted = [], [], [], []
    victim = sorted(tree.rglob("*.py"))[0]
    for i in range(repeats):
        shutil.rmtree(cache, ignore_errors=True)
        cold.append(wall([*LINT, "-j", "1", "."], cwd=tree))
        warm.append(wall([*LINT, "-j", "1", "."], cwd=tree))
        before = _cached_results(cache)
        with open(victim, "a", encoding="utf-8") as f:
            f.write(f"\n# edit {i}\n")
        edited.append(wall([*LINT, "-j", "1", "."], cwd=tree))
        relinted.append(len(_cached_results(cache) - before))
    c, w, e = statistics.median(cold), statistics.median(warm), statistics.median(edited)
    return {"cold_s": c, "cached_s": w, "speedup": c / w, "one_edit_s": e, "relinted_after_one_edit": max(relinted)}


def _cached_results(cache: Path) -> set[str]:
    """The result entries (`.torchsync_cache/v<version>/results/<xx>/<key>.json`): a re-linted
    file adds one under its new key."""
    return {p.name for p in cache.glob("v*/results/*/*.json")}


# -- 5. one small file ----------------------------------------------------------------------------
def small_file(repeats: int, into: Path) -> dict:
    alone = into / "solo"
    alone.mkdir()
    shutil.copy(SMALL_FILE, alone / SMALL_FILE.name)
    n = max(repeats, 7)
    bare = median_wall([PY, "-c", "pass"], n)
    libcst_import = median_wall([PY, "-c", "import libcst"], n)
    one = median_wall([*LINT, SMALL_FILE.name], n, cwd=alone)
    return {"file": SMALL_FILE.relative_to(ROOT).as_posix(), "lines": SMALL_FILE.read_text().count("\n"),
            "python_s": bare, "import_libcst_s": libcst_import, "check_s": one}


# -- 6. the project view ---------------------------------------------------------------------------
def fifty_modules(into: Path) -> Path:
    """A 50-module package: data.py builds loaders, engine.py steps, 46 helper modules
    imported in chains (each imports the previous two), train.py wires them together."""
    root = into / "fifty"
    pkg = root / "src" / "fifty"
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "fifty"\n')
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text(
        "from torch.utils.data import DataLoader, TensorDataset\nimport torch\n\n\n"
        "def make_loader(n, workers):\n"
        "    ds = TensorDataset(torch.randn(n, 8), torch.randint(0, 4, (n,)))\n"
        "    return DataLoader(ds, batch_size=32, num_workers=workers)\n"
    )
    for i in range(46):
        deps = "".join(f"from fifty.helper_{j} import scale_{j}\n" for j in (i - 1, i - 2) if j >= 0)
        body = " * ".join([f"scale_{j}(x)" for j in (i - 1, i - 2) if j >= 0] or ["x"])
        (pkg / f"helper_{i}.py").write_text(
            f"import torch\n{deps}\n\ndef scale_{i}(x):\n    return {body} / {i + 2}\n\n\n"
            f"def report_{i}(loss):\n    return float(loss.detach().mean().item())\n"
        )
    (pkg / "engine.py").write_text(
        "import torch.nn.functional as F\nfrom fifty.helper_45 import scale_45, report_45\n\n\n"
        "def train_one_epoch(model, loader, optimizer, device):\n"
        "    for x, y in loader:\n"
        "        x, y = x.to(device), y.to(device)\n"
        "        loss = F.cross_entropy(model(scale_45(x)), y)\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
        "        report_45(loss)\n"
    )
    (pkg / "train.py").write_text(
        "import torch\nfrom fifty.data import make_loader\nfrom fifty.engine import train_one_epoch\n\n\n"
        "def main():\n    device = torch.device('cuda')\n    model = torch.nn.Linear(8, 4).to(device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for epoch in range(3):\n        train_one_epoch(model, make_loader(1024, 0), optimizer, device)\n"
    )
    return root


def project_view(repeats: int, into: Path) -> dict:
    root = fifty_modules(into)
    target = root / "src" / "fifty" / "engine.py"
    alone = into / "engine_alone"
    alone.mkdir()
    shutil.copy(target, alone / "engine.py")
    n = max(repeats, 7)
    single = median_wall([*LINT, "engine.py"], n, cwd=alone)
    subprocess.run([*LINT, "."], cwd=root, capture_output=True, check=False, env=ENV)  # the cache as after a first run
    in_project = []
    for i in range(n):  # pre-commit: the file was just edited
        with open(target, "a", encoding="utf-8") as f:
            f.write(f"# edit {i}\n")
        in_project.append(wall([*LINT, "src/fifty/engine.py"], cwd=root))
    throughput = _tree_throughput(root, repeats)
    return {"single_file_alone_s": single, "same_file_in_project_s": statistics.median(in_project),
            "ratio": statistics.median(in_project) / single, **throughput}


def _tree_throughput(root: Path, repeats: int) -> dict:
    """In-process: the whole tree with the project view vs each module alone (no view)."""
    from torchsync_lint.api import config_for, lint_paths
    from torchsync_lint.engine import lint_source
    from torchsync_lint.rule import load_rules

    files = python_files([root])
    codes = {c for c, r in load_rules().items() if r.default_enabled}
    config = config_for([str(root)])
    from torchsync_lint.parallel import relaxed_gc

    with_view, without = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        lint_paths([str(root)], config, 1, use_cache=False)
        with_view.append(time.perf_counter() - t0)
        with relaxed_gc():  # as lint_paths runs: compare the analyses, not collector settings
            t0 = time.perf_counter()
            for p in files:
                try:
                    lint_source(p.read_text(encoding="utf-8", errors="replace"), str(p), codes, {})
                except Exception:  # noqa: BLE001 - a file a corpus cannot parse is skipped alike
                    pass
            without.append(time.perf_counter() - t0)
    a, b = statistics.median(with_view), statistics.median(without)
    return {"tree_with_view_s": a, "tree_modules_alone_s": b, "tree_slowdown": a / b - 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--corpus", type=Path, action="append", default=[], help="a directory of training scripts to add")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--projects", type=Path, help="a directory of project trees (one per subdirectory): whole-tree time with the project view vs each module alone")
    args = parser.parse_args()
    dirs = [ROOT / "fixtures", *[c.resolve() for c in args.corpus]]
    results: dict = {"load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "torchsync_lint")], check=False, env=ENV)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        results["engine"] = engine_vs_parse(dirs, args.repeats)
        results["torchfix"] = torchfix(dirs, args.repeats)
        tree = project_copy(dirs, tmp_path)
        results["jobs"] = jobs_scaling(tree, args.repeats)
        results["cache"] = cache_runs(tree, args.repeats)
        results["small_file"] = small_file(args.repeats, tmp_path)
        results["project_view"] = project_view(args.repeats, tmp_path)
    if args.projects:
        per = [_tree_throughput(d, args.repeats) for d in sorted(args.projects.iterdir()) if d.is_dir()]
        a, b = sum(r["tree_with_view_s"] for r in per), sum(r["tree_modules_alone_s"] for r in per)
        results["projects_view"] = {"projects": len(per), "with_view_s": a, "modules_alone_s": b, "slowdown": a / b - 1}
    results["load_average_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if args.json:
        print(json.dumps(results, indent=2))
        return
    _print(results)


def _print(r: dict) -> None:
    e, ip = r["engine"], r["engine"]["in_process"]
    print(f"files: {e['files']} ({e['lines']} lines); load average {r['load_average']:.1f} -> {r['load_average_after']:.1f}")
    print(f"check -j 1 --no-cache        {e['check_s']:6.2f} s  {e['check_lines_per_s']:7.0f} lines/s")
    print(f"import libcst + parse        {e['parse_s']:6.2f} s  -> check / parse = {e['ratio']:.2f}x")
    print(f"in-process: lint {ip['lint_s']:.2f} s, parse {ip['parse_s']:.2f} s -> {ip['ratio']:.2f}x")
    t = r["torchfix"]
    print("torchfix: not installed" if t is None else f"torchfix (flake8 --select TOR) {t['torchfix_s']:.2f} s vs check {t['check_s']:.2f} s -> {t['speedup']:.2f}x faster")
    j = r["jobs"]
    print(f"-j 1 {j['j1_s']:.2f} s, -j 2 {j['j2_s']:.2f} s -> {j['speedup']:.2f}x")
    c = r["cache"]
    print(f"cold {c['cold_s']:.2f} s, cached re-run {c['cached_s']:.2f} s -> {c['speedup']:.1f}x; one file edited: {c['one_edit_s']:.2f} s, {c['relinted_after_one_edit']} file(s) re-linted")
    s = r["small_file"]
    print(f"one small file ({s['file']}, {s['lines']} lines): {s['check_s']:.3f} s; python -c pass {s['python_s']:.3f} s; python -c 'import libcst' {s['import_libcst_s']:.3f} s")
    p = r["project_view"]
    print(f"50-module project: engine.py alone {p['single_file_alone_s']:.3f} s, in the project after an edit {p['same_file_in_project_s']:.3f} s -> {p['ratio']:.2f}x")
    print(f"  whole tree with the view {p['tree_with_view_s']:.2f} s vs module by module {p['tree_modules_alone_s']:.2f} s -> {100 * p['tree_slowdown']:+.0f}%")
    if "projects_view" in r:
        v = r["projects_view"]
        print(f"{v['projects']} project trees: with the view {v['with_view_s']:.2f} s vs module by module {v['modules_alone_s']:.2f} s -> {100 * v['slowdown']:+.0f}%")


if __name__ == "__main__":
    main()
