"""The rewrites, in the order the report lists them.

Each is ``Source -> Rewritten | None`` (None: it does not apply to that fixture, e.g. no step
loop to extract). ``runs`` says the rewrite preserves what the program computes, so that its
RESULT line must equal the original's (test_rewrites.py runs a sample).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from .batches import dict_batch
from .extract import extract_loop_body
from .gates import gate_every_n, gate_once
from .harness import load
from .modules import move_to_module
from .names import import_aliases, kwargs, rename_locals, rename_misleading
from .rewritten import Rewritten, Source
from .settings import argparse_namespace, config_dict
from .trainers import base_trainer, lightning_module, trainer_class


@dataclass(frozen=True)
class Rewrite:
    name: str
    apply: Callable[[Source], Rewritten | None]
    expected: str  # what the analysis must find afterwards, in words (the report prints it)
    runs: bool = True  # semantics-preserving: the rewritten program prints the same RESULT


def _then(first, second):
    def both(src: Source) -> Rewritten | None:
        a = first(src)
        if a is None:
            return None
        return second(Source(a.files[src.name], src.name, src.markers))

    return both


REWRITES = [
    Rewrite("extract_loop_body", extract_loop_body, "same findings"),
    Rewrite("move_to_module", move_to_module, "same findings"),
    Rewrite("extract_then_move", _then(extract_loop_body, move_to_module), "same findings"),
    Rewrite("trainer_class", trainer_class, "same findings"),
    Rewrite("base_trainer", base_trainer, "same findings"),
    Rewrite("kwargs", kwargs, "same findings"),
    Rewrite("config_dict", config_dict, "configured values' findings gone, the rest same"),
    Rewrite("argparse_namespace", argparse_namespace, "configured values' findings gone, the rest same"),
    Rewrite("rename_locals", rename_locals, "same findings"),
    Rewrite("rename_misleading", rename_misleading, "same findings"),
    Rewrite("import_aliases", import_aliases, "same findings"),
    Rewrite("dict_batch", dict_batch, "same findings"),
    Rewrite("lightning_module", lightning_module, "same findings; a batch's .to(device) gone (Lightning moved it)", runs=False),
    Rewrite("gate_every_n", gate_every_n, "same findings, gated ones say so (TSL204 gone)", runs=False),
    Rewrite("gate_once", gate_once, "gated findings gone", runs=False),
]

BY_NAME = {r.name: r for r in REWRITES}


def rewrite_of(name: str, path: Path) -> Rewritten | None:
    """Rewrite ``name`` of the fixture at ``path``, computed once per process (the tests of the
    rewrites and of the invariance share it)."""
    return _rewrites_of(path)[name]


@lru_cache(maxsize=None)
def _rewrites_of(path: Path) -> dict[str, Rewritten | None]:
    # every rewrite of one fixture at once: they share its Analysis (loops.analysis_of), which
    # is too big to keep for every fixture; the rewritten texts are small
    src = load(path)
    return {r.name: r.apply(src) for r in REWRITES}
