"""Merge what benchmarks/verify_gpu.sh brought back into one results page and one JSON report.

    python benchmarks/verify_gpu_merge.py RESULTS_DIR --output docs/verification/cuda-h200

RESULTS_DIR is the ``r`` folder of results.tar.gz: ``confirm_*.json`` (the confirmation pass in
shards), ``probes.json`` (benchmarks/gpu_probes/, run beside it) and ``measure_*.json`` (one A/B
per script). A script that was measured keeps the
entries of its measured run (they hold the cost) and drops those of its confirmation run; every
other script keeps its confirmation entries. The environment comes from the first shard's page
and environment.txt, the commands from every page.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from torchsync_lint.verify.matching import Entry
from torchsync_lint.verify.report import ENVIRONMENT_FIELDS, render_json, render_markdown

_ROW = re.compile(r"^\| ([^|]+) \| (.*) \|$")


def page_environment(page: Path) -> dict:
    """The environment table at the top of a page render_markdown wrote, by label."""
    by_label = {label: key for key, label in ENVIRONMENT_FIELDS}
    environment = {}
    for line in page.read_text(encoding="utf-8").splitlines()[4:]:
        match = _ROW.match(line)
        if not match:
            break
        if match.group(1) in by_label:
            environment[by_label[match.group(1)]] = match.group(2)
    return environment


def merge(results: Path) -> tuple[list[Entry], list[str], dict, list[str]]:
    measured = {path: json.loads(path.read_text()) for path in sorted(results.glob("measure_*.json"))}
    measured_scripts = {entry.get("script") or entry["path"] for entries in measured.values() for entry in entries}
    entries, commands = [], []
    for path in sorted(results.glob("confirm_*.json")) + sorted(results.glob("probes.json")):
        entries += [Entry.from_json(e) for e in json.loads(path.read_text()) if (e.get("script") or e["path"]) not in measured_scripts]
    for data in measured.values():
        entries += [Entry.from_json(e) for e in data]
    pages = sorted(results.glob("confirm_*.md")) + sorted(results.glob("probes.md")) + sorted(results.glob("measure_*.md"))
    for page in pages:
        commands.append(page_environment(page).get("command", "?"))
    environment = page_environment(pages[0])
    environment["command"] = f"{len(pages)} runs of benchmarks/verify_gpu.sh, listed below"
    scripts = sorted({e.run_script for e in entries})
    return entries, scripts, environment, commands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--output", type=Path, required=True, help="writes OUTPUT.md and OUTPUT.json")
    args = parser.parse_args()
    entries, scripts, environment, commands = merge(args.results)
    page = render_markdown(entries, scripts, "cuda", environment)
    page += "\n## Commands\n\n" + "\n".join(f"- `{command}`" for command in commands) + "\n"
    args.output.with_suffix(".md").write_text(page, encoding="utf-8")
    args.output.with_suffix(".json").write_text(render_json(entries), encoding="utf-8")


if __name__ == "__main__":
    main()
