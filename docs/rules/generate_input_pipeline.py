"""Regenerate docs/rules/input_pipeline.md from the TSL3xx rule docstrings.

    PYTHONPATH=. python docs/rules/generate_input_pipeline.py

The intro and the fixture table live here; each rule's section comes from its docstring, so
the page cannot drift from `torchsync-lint explain` (tests/test_input_pipeline_rules.py checks).
"""

from __future__ import annotations

from pathlib import Path

from torchsync_lint.rule import load_rules
from torchsync_lint.rules.input_pipeline import WORKERS

HEAD = '# Input-pipeline rules (TSL301–TSL305)\n\nA starved input pipeline leaves the GPU idle between steps. Public write-ups measured **2.5x**\non an MNIST toy from DataLoader workers plus pinned memory, and **8x** on a CIFAR-like\nResNet-18 from a profile-driven pass (workers, pinning, uint8 transfer normalised on the GPU,\nbatch size, AMP, `torch.compile`). These rules find the pipeline half of that statically.\n\nHow the rules decide (all five):\n\n- **DataLoader constructors** are found by qualified name through any import or alias:\n  `torch.utils.data.DataLoader`, `torch.utils.data.dataloader.DataLoader`,\n  `from torch.utils.data import DataLoader as DL`, `import torch.utils.data as tud`.\n  Arguments are read by keyword or position, per the torch 2.13 signature\n  (`DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,\n  pin_memory, ...)`: `num_workers` is the 6th positional, `pin_memory` the 8th).\n- **Configured values are never findings**: `num_workers=args.workers`, `pin_memory=cfg.pin`,\n  `**loader_kwargs`, `*args`, function parameters. A literal, or a name bound only to that\n  literal (`NUM_WORKERS = 0`), is known.\n- **Feeding a GPU**: the module uses an accelerator (`.cuda()`, `.to("cuda")`,\n  `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, HF Accelerate,\n  Lightning), and a loop over the loader (through names, `self.x`, same-module function\n  parameters, `enumerate`/`zip`/`tqdm`) copies its batches to the device or runs a training\n  step, or the loader is handed to `accelerator.prepare`, `fabric.setup_dataloaders`, a\n  Lightning `Trainer`, run by a pytorch-ignite engine that moves its batches\n  (`trainer.run(loader)`), or returned by a Lightning `*_dataloader` hook. HF `Trainer` builds\n  its loaders from `TrainingArguments` (`dataloader_num_workers` 0, `dataloader_pin_memory`\n  True by default in transformers 5.23): those are read at the `TrainingArguments(...)` call. A CPU-only script\n  (including one whose every Lightning `Trainer` says `accelerator=\"cpu\"`) gets no\n  TSL301–TSL305 finding.\n- **Hot loop**: as in DESIGN §3: a loop that iterates a DataLoader or runs the training step.\n\n| code | name | fix | what the runtime verifier observes |\n|---|---|---|---|\n| [TSL301](#tsl301) | `blocking-host-to-device-copy` | safe: add `non_blocking=True` | a blocking H2D copy (stream sync) at the line |\n| [TSL302](#tsl302) | `dataloader-unpinned-memory` | safe: `pin_memory=True` | a batch of the unpinned loader copied to the device |\n| [TSL303](#tsl303) | `dataloader-main-process-loading` | unsafe: `num_workers=@WORKERS@` + `import os` | `DataLoader.__iter__` with `num_workers == 0` |\n| [TSL304](#tsl304) | `host-float-normalization` | suggestion, as text (`--show-suggestions`): uint8 on the host and `.float().div_(255)` + mean/std on the device | a float32 tensor made from uint8 on the host, copied H2D |\n| [TSL305](#tsl305) | `host-tensor-in-loop` | safe: `torch.full((), v, device=d)` for a literal scalar, `device=` on a `zeros`/`ones`/... factory (unsafe for random factories, a fractional `arange`, `linspace`) | `torch.tensor(host data, device=cuda)`: a blocking H2D copy |\n\n'
TAIL = '## Fixtures\n\n`fixtures/input_pipeline/` replays the seed scenario step by step on a fake CIFAR-like uint8\ndataset (torch only, CPU-capable, `--steps N`):\n\n| fixture | change | expected findings |\n|---|---|---|\n| `pipeline_baseline.py` | no workers, no pinning, blocking copies, float32 normalisation in `__getitem__` | TSL301, TSL302, TSL303, TSL304 |\n| `pipeline_workers.py` | + `num_workers=2` | TSL301, TSL302, TSL304 |\n| `pipeline_pinned.py` | + `pin_memory=True`, `non_blocking=True` | TSL304 |\n| `pipeline_uint8.py` | + uint8 transfer, normalised on the device (constants rebuilt per step) | TSL305 (x2) |\n| `../clean/pipeline_optimized.py` | constants hoisted, persistent workers, bf16 autocast on CUDA | none |\n\nThe `*_torchvision.py` twins (`transforms.ToTensor()` + `Normalize`, `v2.ToDtype(torch.float32,\nscale=True)`, and a clean `v2.PILToTensor()` end state) carry `requires=torchvision`: they are\nalways linted and skipped at runtime where torchvision is not installed. All plain-torch steps\nprint the same losses for the same seed: the fixes change speed, not results.\n'
SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems")


def render() -> str:
    rules = load_rules()
    out = [HEAD.replace("@WORKERS@", WORKERS)]
    for code in sorted(c for c in rules if c.startswith("TSL3")):
        rule = rules[code]
        message = rule.message.replace("{expr}", "...").replace("{advice}", "...").replace("{workers}", f"num_workers={WORKERS}")
        out.append(f"## {code}\n\n`{rule.name}`: {message}.\n\n")
        for title in SECTIONS:
            body = rule.section(title)
            if body:
                out.append(f"### {title}\n\n{body}\n\n")
    out.append(TAIL)
    return "".join(out)


if __name__ == "__main__":
    Path(__file__).with_name("input_pipeline.md").write_text(render(), encoding="utf-8")
