"""Latency of `torchsync-lint server`, measured as an editor sees it (issue 25).

A pygls client spawns `python -m torchsync_lint server`, opens the documents, then sends
edits one at a time and times each from the `didChange` to the `publishDiagnostics` of that
version. The debounce is measured apart from the lint:

- the server run with `--debounce-ms 0`: change -> diagnostics is the lint plus the protocol;
- the same edits with the default debounce: that number minus the first is what the debounce
  adds (a client sends one change per keystroke; the debounce waits for a pause in typing);
- the lint alone, in-process (server/workspace.py's `Workspace.lint_document`, no protocol),
  next to libcst's parse of the same text (a floor: the engine parses the whole module on
  every change), and apart from it the re-lint of the open documents the edit changed
  (`relint`), which the server publishes after the edited document's diagnostics.

Scenarios: a 500-line training script alone in its project, dense with hazards (target:
diagnostics within 50 ms of a change); a module of about 500 lines of ordinary code (this
repository's rules/input_pipeline.py, no findings); and the engine module of bench_lint.py's
synthetic 50-module project, with its training script and a helper open beside it (target:
100 ms). Also the server's start-up (spawn -> `initialize` answered) and the first
diagnostics of a cold server, which import the parser. Medians (and the 90th percentile) of ``--repeats`` edits; not part of the test suite.

    python benchmarks/bench_server.py [--repeats 30] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lint import ENV, PY, ROOT, fifty_modules  # noqa: E402

sys.path.insert(0, str(ROOT))
from torchsync_lint.server import DEFAULT_DEBOUNCE_MS  # noqa: E402

# A 500-line module of ordinary Python that mentions torch but holds few hazards (this
# repository's own rule family), against the hazard-dense synthetic script.
ORDINARY = ROOT / "torchsync_lint" / "rules" / "input_pipeline.py"

BLOCK = '''

def train_epoch_{i}(model, loader, optimizer, device, writer, step0):
    """Epoch variant {i}: a per-step loop with the usual hazards."""
    model.train()
    total = 0.0
    for step, (images, labels) in enumerate(loader):
        images = images.to(device)
        labels = labels.to(device)
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        if step % 50 == 0:
            writer.add_scalar("loss/{i}", loss, step0 + step)
    return total / max(len(loader), 1)
'''

HEADER = '''import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


def make_loader(n):
    ds = TensorDataset(torch.randn(n, 3, 8, 8), torch.randint(0, 10, (n,)))
    return DataLoader(ds, batch_size=32, shuffle=True)
'''

MAIN = '''

def main():
    device = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    writer = SummaryWriter()
    loader = make_loader(4096)
    for epoch in range({n}):
        train_epoch_0(model, loader, optimizer, device, writer, epoch)
'''


def five_hundred_lines(into: Path) -> Path:
    root = into / "single"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "single"\n')
    blocks, text = 0, HEADER
    while len((text + BLOCK + MAIN).splitlines()) <= 500 - len(BLOCK.splitlines()):
        text += BLOCK.format(i=blocks)
        blocks += 1
    text += MAIN.format(n=3)
    while len(text.splitlines()) < 500:
        text += "# padding\n"
    path = root / "train.py"
    path.write_text(text)
    return path


class Client:
    """A pygls client that records when each document's diagnostics arrive, by version."""

    def __init__(self) -> None:
        self.client = LanguageClient("bench", "0")
        self.arrived: dict[tuple[str, int | None], float] = {}
        self.event = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: lsp.PublishDiagnosticsParams) -> None:
            self.arrived.setdefault((params.uri, params.version), time.perf_counter())
            self.event.set()

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def log(params) -> None:
            pass

    async def start(self, root: Path, debounce_ms: int) -> float:
        t0 = time.perf_counter()
        await self.client.start_io(PY, "-m", "torchsync_lint", "server", "--debounce-ms", str(debounce_ms), env=ENV)
        await self.client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=from_fs_path(str(root))))
        started = time.perf_counter() - t0
        self.client.initialized(lsp.InitializedParams())
        return started

    async def wait(self, uri: str, version: int, timeout: float = 60) -> float:
        deadline = time.perf_counter() + timeout
        while (uri, version) not in self.arrived:
            self.event.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            try:
                await asyncio.wait_for(self.event.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return self.arrived[(uri, version)]

    async def open(self, path: Path) -> float:
        uri = from_fs_path(str(path))
        t0 = time.perf_counter()
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", 1, path.read_text())))
        return await self.wait(uri, 1) - t0

    async def change(self, path: Path, text: str, version: int) -> float:
        uri = from_fs_path(str(path))
        t0 = time.perf_counter()
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version, uri), [lsp.TextDocumentContentChangeWholeDocument(text)]))
        return await self.wait(uri, version) - t0

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.sleep(0.2)
        await self.client.stop()


def _edits(text: str, repeats: int) -> list[str]:
    """Edits as a user makes them: a statement in a loop body changes (its findings move)."""
    lines = text.splitlines(keepends=True)
    target = next(n for n, line in enumerate(lines) if "images = images.to(device)" in line)
    out = []
    for k in range(repeats):
        edited = list(lines)
        edited[target] = f"        images = images.to(device)  # edit {k}\n" if k % 2 else "        images = images.to(device, non_blocking=True)\n"
        out.append("".join(edited))
    return out


async def scenario(edited: Path, also_open: list[Path], root: Path, debounce_ms: int, repeats: int, edit_text=None) -> dict:
    client = Client()
    started = await client.start(root, debounce_ms)
    first = await client.open(edited)
    for other in also_open:
        await client.open(other)
    texts = edit_text(edited.read_text(), repeats + 3) if edit_text else _edits(edited.read_text(), repeats + 3)
    latencies = []
    for version, text in enumerate(texts, 2):
        latencies.append(await client.change(edited, text, version))
        await asyncio.sleep(0.05)
    await client.stop()
    kept = latencies[3:]  # the first edits still warm caches
    return {"start_s": started, "first_diagnostics_s": first, "median_ms": 1000 * statistics.median(kept),
            "p90_ms": 1000 * sorted(kept)[int(0.9 * (len(kept) - 1))], "edits": len(kept)}


def in_process(edited: Path, also_open: list[Path], repeats: int, edit_text=None) -> dict:
    from torchsync_lint.server.workspace import Workspace

    ws = Workspace()
    ws.open(str(edited), edited.read_text(), 1)
    for other in also_open:
        ws.open(str(other), other.read_text(), 1)
    texts = edit_text(edited.read_text(), repeats + 3) if edit_text else _edits(edited.read_text(), repeats + 3)
    times, dependents, relinted = [], [], []
    for version, text in enumerate(texts, 2):
        ws.update(str(edited), text, version)
        t0 = time.perf_counter()
        _, others = ws.lint_document(str(edited))
        t1 = time.perf_counter()
        again = ws.relint(others)
        times.append(t1 - t0)
        dependents.append(time.perf_counter() - t1)
        relinted.append(len(again))
    import libcst

    parses = []
    for text in texts[3:]:
        t0 = time.perf_counter()
        libcst.parse_module(text)
        parses.append(time.perf_counter() - t0)
    kept = times[3:]
    return {"median_ms": 1000 * statistics.median(kept), "parse_only_median_ms": 1000 * statistics.median(parses), "p90_ms": 1000 * sorted(kept)[int(0.9 * (len(kept) - 1))],
            "dependents_median_ms": 1000 * statistics.median(dependents[3:]), "dependents_relinted_max": max(relinted[3:], default=0)}


def _module_edits(text: str, repeats: int) -> list[str]:
    """Edits to any module: a top-level statement added before its first definition (every
    line below moves), alternating with the file as it was."""
    lines = text.splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith(("def ", "class ")))
    return ["".join(lines[:at] + [f"BENCH_EDIT = {k}\n\n"] + lines[at:]) if k % 2 == 0 else text + f"# edit {k}\n" for k in range(repeats)]


def _engine_edits(text: str, repeats: int) -> list[str]:
    return [text.replace("x, y = x.to(device), y.to(device)", f"x, y = x.to(device), y.to(device)  # {k}" if k % 2 else "x = x.to(device)\n        y = y.to(device)") for k in range(repeats)]


def _findings(path: Path) -> int:
    from torchsync_lint.server.workspace import Workspace

    return len(Workspace(use_cache=False).open(str(path), path.read_text(), 1)[0].findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "torchsync_lint")], check=False, env=ENV)
    results: dict = {"load_average": os.getloadavg()[0], "default_debounce_ms": DEFAULT_DEBOUNCE_MS}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        single = five_hundred_lines(tmp_path)
        project = fifty_modules(tmp_path)
        pkg = project / "src" / "fifty"
        ordinary = tmp_path / "ordinary"
        ordinary.mkdir()
        (ordinary / "pyproject.toml").write_text('[project]\nname = "ordinary"\n')
        module = ordinary / ORDINARY.name
        module.write_text(ORDINARY.read_text())
        cases = {
            "500_lines": (single, [], single.parent, None),
            "500_lines_ordinary": (module, [], ordinary, _module_edits),
            "50_modules": (pkg / "engine.py", [pkg / "train.py", pkg / "helper_45.py"], project, _engine_edits),
        }
        for name, (edited, also, root, edits) in cases.items():
            results[name] = {
                "lines": len(edited.read_text().splitlines()),
                "findings": _findings(edited),
                "lint_in_process": in_process(edited, also, args.repeats, edits),
                "debounce_0": asyncio.run(scenario(edited, also, root, 0, args.repeats, edits)),
                "debounce_default": asyncio.run(scenario(edited, also, root, DEFAULT_DEBOUNCE_MS, args.repeats, edits)),
            }
    results["load_average_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    targets = {"500_lines": 50, "500_lines_ordinary": 50, "50_modules": 100}
    print(f"load average {results['load_average']:.2f} -> {results['load_average_after']:.2f}; default debounce {DEFAULT_DEBOUNCE_MS} ms")
    for name, r in ((k, results[k]) for k in targets):
        d0, dd, ip = r["debounce_0"], r["debounce_default"], r["lint_in_process"]
        print(f"{name} ({r['lines']} lines, {r['findings']} findings, edited): lint in-process {ip['median_ms']:.1f} ms (p90 {ip['p90_ms']:.1f}; "
              f"libcst's parse alone {ip['parse_only_median_ms']:.1f}); "
              f"change -> diagnostics, debounce 0: {d0['median_ms']:.1f} ms (p90 {d0['p90_ms']:.1f}); "
              f"debounce {DEFAULT_DEBOUNCE_MS}: {dd['median_ms']:.1f} ms (p90 {dd['p90_ms']:.1f}); target {targets[name]} ms")
        if ip["dependents_relinted_max"]:
            print(f"  then {ip['dependents_relinted_max']} open dependents re-linted: {ip['dependents_median_ms']:.1f} ms (published after the edited file)")
        print(f"  start-up (spawn -> initialize answered) {d0['start_s']:.3f} s; first diagnostics after open (cold) {d0['first_diagnostics_s']:.3f} s")


if __name__ == "__main__":
    main()
