"""What each finding of the scale fixtures costs: `verify --measure` on fixtures/scale/, as a page.

    python benchmarks/verify_scale.py --backend cuda --scale large --repeats 5   # a GPU
    python benchmarks/verify_scale.py --backend emulate --output-dir /tmp/scale  # any machine

Runs `torchsync-lint verify SCRIPTS --measure` (every finding confirmed at its line, then the
original, the whole fix and each fix applied alone timed in --repeats alternating fresh runs)
and writes OUTPUT_DIR/<device>-scale.md and .json: per script, the whole fix's cost and each
isolated finding's, with medians and spreads. The core of benchmarks/verify_gpu_scale.sh. Under
emulate the numbers are CPU times of a CPU run, and the page says that they do not predict the
GPU cost. Exit status: verify's (0 when every marker was confirmed and nothing failed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchsync_lint.verify import environment as run_environment  # noqa: E402
from torchsync_lint.verify.matching import Entry  # noqa: E402
from torchsync_lint.verify.measure import CPU_CAVEAT  # noqa: E402
from torchsync_lint.verify.report import render_markdown  # noqa: E402
from torchsync_lint.verify.scripts import discover  # noqa: E402


def device_slug(environment: dict, backend: str) -> str:
    """"cuda-h200" for an "NVIDIA H200", "emulate-cpu" under emulate: the page's file name."""
    if backend == "emulate":
        return "emulate-cpu"
    name = re.sub(r"^nvidia\s+", "", str(environment.get("gpu") or "gpu").strip().lower())
    return "cuda-" + (re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu")


def run_verify(scripts: list[str], args: argparse.Namespace, report: Path) -> int:
    from torchsync_lint.cli import main

    argv = ["verify", *scripts, "--backend", args.backend, "--scale", args.scale, "--measure", "--repeats", str(args.repeats)]
    argv += ["--timeout", str(args.timeout), "--jobs", "1", "--format", "json", "--output-file", str(report)]
    if args.steps is not None:
        argv += ["--steps", str(args.steps)]
    if args.trace_dir:
        argv += ["--trace-dir", args.trace_dir]
    return main(argv)


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _cost_row(what: str, data: dict) -> str:
    where = "**outside**" if data["significant"] else ("within" if data["runs"] >= 2 else "none (1 run)")
    return (
        f"| {what} | {_ms(data['original_ms_per_step'])} ± {_ms(data['original_spread_ms'])} | "
        f"{_ms(data['fixed_ms_per_step'])} ± {_ms(data['fixed_spread_ms'])} | {_ms(data['cost_ms_per_step'])} | "
        f"{data['cost_pct']:.1f} | {where} | {data['runs']} |"
    )


def summarize(entries: list[Entry]) -> list[dict]:
    """Per script: its confirmation (markers confirmed, failures) and its measurement."""
    out = []
    for script in sorted({e.run_script for e in entries}):
        own = [e for e in entries if e.run_script == script]
        measured = next((e for e in own if e.status == "measured"), None)
        not_measured = next((e for e in own if e.status == "not-measured"), None)
        out.append({
            "script": script,
            "confirmed": sorted({(e.line, e.code or "expect-sync") for e in own if e.status == "confirmed"}),
            "failing": [f"{e.path}:{e.line or ''} {e.status}" for e in own if e.failed],
            "measurement": measured.measurement if measured else None,
            "not_measured": not_measured.detail if not_measured else None,
        })
    return out


def render_page(summary: list[dict], entries: list[Entry], environment: dict, args: argparse.Namespace, code: int) -> str:
    cpu = any((s["measurement"] or {}).get("cpu_times") for s in summary) or args.backend == "emulate"
    lines = [f"# What each finding costs at scale: {environment.get('device', 'unknown device')}", ""]
    lines += [
        f"`benchmarks/verify_scale.py --backend {args.backend} --scale {args.scale} --repeats {args.repeats}`"
        f"{'' if args.steps is None else f' --steps {args.steps}'}: verify exit status {code}.",
        "Each variant (the original, the whole fix, each fix applied alone) ran in "
        f"{args.repeats} fresh processes, the variants alternating; a run's step time is the median of its steady steps, "
        "a variant's the median over its runs, ± the spread (max - min over runs). A cost is *outside the spread* when "
        "it exceeds the spread of both variants compared.",
        "",
    ]
    if cpu:
        lines += [f"**{CPU_CAVEAT}.** The GPU numbers of these fixtures are pending a run of benchmarks/verify_gpu_scale.sh.", ""]
    for item in summary:
        lines += [f"## `{item['script']}`", ""]
        confirmed = ", ".join(f"{code} at line {line}" for line, code in item["confirmed"]) or "none"
        lines += [f"Confirmed at runtime: {confirmed}." + (f" Failing: {'; '.join(item['failing'])}." if item["failing"] else ""), ""]
        data = item["measurement"]
        if data is None:
            lines += [f"Not measured: {item['not_measured'] or 'no measurement'}.", ""]
            continue
        lines += [
            f"Timer: {data['timer']}.",
            "",
            "| fix | original ms/step | fixed ms/step | cost ms/step | % of step | spread | runs |",
            "|---|---|---|---|---|---|---|",
            _cost_row(f"whole fix (`{data['whole']['variant']}`)", data["whole"]),
        ]
        for one in data["findings"]:
            what = ", ".join(f"{f['code']} at line {f['line']}" for f in one["findings"]) + " alone"
            lines.append(_cost_row(what, one))
        lines.append("")
        if data["not_isolated"]:
            lines += ["Not isolated (no automatic fix): " + ", ".join(f"{f['code']} at line {f['line']}" for f in data["not_isolated"]) + ".", ""]
    lines += ["## All entries", "", *render_markdown(entries, sorted({e.run_script for e in entries}), args.backend, environment).splitlines()[2:]]
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", help="default: the fixture scripts of fixtures/scale/")
    parser.add_argument("--backend", choices=("cuda", "emulate"), default="cuda")
    parser.add_argument("--scale", choices=("small", "medium", "large"), default=None, help="default: large on cuda, small under emulate")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="steady steps per run (default: each fixture's pragma)")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--trace-dir", default=None)
    parser.add_argument("--output-dir", type=Path, default=ROOT / "docs" / "verification")
    args = parser.parse_args(argv)
    args.output_dir = args.output_dir.resolve()  # before the chdir to the root
    args.scripts = [os.path.relpath(os.path.abspath(p), ROOT) for p in args.scripts]
    args.scale = args.scale or ("large" if args.backend == "cuda" else "small")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    os.chdir(ROOT)  # the page names the scripts as the repository does
    scripts = args.scripts or discover(["fixtures/scale"])[0]
    environment = run_environment.collect(args.backend)
    if args.backend == "emulate":
        environment["device"] = "CPU (emulate backend: syncs counted on a virtual GPU; step times of a CPU run)"
    environment["command"] = "benchmarks/verify_scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="torchsync-scale-") as tmp:
        report = Path(tmp) / "verify.json"
        code = run_verify(scripts, args, report)
        entries = [Entry.from_json(e) for e in json.loads(report.read_text(encoding="utf-8"))]
    summary = summarize(entries)
    slug = device_slug(environment, args.backend)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    page = render_page(summary, entries, environment, args, code)
    (args.output_dir / f"{slug}-scale.md").write_text(page, encoding="utf-8")
    data = {
        "environment": environment, "backend": args.backend, "scale": args.scale, "repeats": args.repeats, "steps": args.steps,
        "exit_status": code, "scripts": summary, "entries": [e.to_json() for e in entries],
    }
    (args.output_dir / f"{slug}-scale.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output_dir / slug}-scale.md and .json (verify exit status {code})")
    return code


if __name__ == "__main__":
    sys.exit(main())
