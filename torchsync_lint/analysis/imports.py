"""Import and alias resolution: turn `T.cuda.synchronize` into `torch.cuda.synchronize`.

libcst's QualifiedNameProvider costs seconds on large files (see notes/anchors.md §0.5) and
does not canonicalise re-exports, so we keep a tiny map of our own: one pass over the
import statements, then a walk down each dotted name.
"""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

# Re-exports resolved to the public name the rules match on (TorchFix missed the first one).
CANONICAL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("torch.utils.data.dataloader.", "torch.utils.data."),
    ("torch.utils.data.dataset.", "torch.utils.data."),
    ("torch.utils.data.sampler.", "torch.utils.data."),
    ("torch.nn.modules.module.", "torch.nn."),
    ("torch.nn.modules.", "torch.nn."),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
    ("torch.optim.optimizer.", "torch.optim."),
    ("torch.cuda.streams.", "torch.cuda."),
    ("torch.cuda.amp.grad_scaler.", "torch.cuda.amp."),
    ("torch.amp.grad_scaler.", "torch.amp."),
    ("torchmetrics.aggregation.", "torchmetrics."),
    ("torchmetrics.classification.accuracy.", "torchmetrics.classification."),
    ("torchmetrics.classification.precision_recall.", "torchmetrics.classification."),
    ("torchmetrics.classification.f_beta.", "torchmetrics.classification."),
    ("torchmetrics.collections.", "torchmetrics."),
    ("torchmetrics.metric.", "torchmetrics."),
    ("pytorch_lightning.core.module.", "pytorch_lightning."),
    ("pytorch_lightning.core.", "pytorch_lightning."),
    ("lightning.pytorch.core.module.", "lightning."),
    ("lightning.pytorch.callbacks.prediction_writer.", "lightning.callbacks."),
    ("lightning.pytorch.callbacks.callback.", "lightning.callbacks."),
    ("lightning.pytorch.", "lightning."),
    ("pytorch_lightning.", "lightning."),
    ("lightning_fabric.", "lightning.fabric."),
    ("accelerate.accelerator.", "accelerate."),
)


@lru_cache(maxsize=8192)
def canonical(qualname: str) -> str:
    """Map a re-exported dotted name to the name the rules use (to a fixed point; memoised,
    as the same few names are asked for at every call site)."""
    for _ in range(4):
        for prefix, replacement in CANONICAL_PREFIXES:
            if qualname.startswith(prefix):
                rest = qualname[len(prefix) :]
                # `torch.nn.modules.linear.Linear` -> `torch.nn.Linear`: drop the private submodule.
                if prefix == "torch.nn.modules." and "." in rest:
                    rest = rest.split(".", 1)[1]
                qualname = replacement + rest
                break
        else:
            return qualname
    return qualname


def dotted_parts(node: cst.BaseExpression) -> list[str] | None:
    """`a.b.c` -> ["a", "b", "c"]; None for anything that is not a plain dotted name."""
    parts: list[str] = []
    while type(node) is cst.Attribute:  # exact type tests: hot, and isinstance on ABCs is slow
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return parts[::-1]


def _module_name(node: cst.BaseExpression | None) -> str:
    parts = dotted_parts(node) if node is not None else None
    return ".".join(parts) if parts else ""


class ImportMap:
    """Local name -> qualified name, from every import statement in a module.

    Function-level imports are folded into the same map: shadowing an import alias with a
    different import of the same name inside one module is rare enough to ignore.
    """

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.star_imports: list[str] = []  # modules of `from m import *`

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None:
                    self.aliases[alias.asname.name.value] = full  # type: ignore[union-attr]
                else:
                    top = full.split(".")[0]
                    self.aliases[top] = top
            return
        if isinstance(node.names, cst.ImportStar):
            self.star_imports.append("." * len(node.relative) + _module_name(node.module))
            return  # the names it binds are known to the project view only
        # Relative imports keep their dots (`from .engine import f` -> `.engine.f`): the project
        # view resolves them against the importing file's package.
        module = "." * len(node.relative) + _module_name(node.module)
        for alias in node.names:
            name = _module_name(alias.name)
            local = alias.asname.name.value if alias.asname is not None else name  # type: ignore[union-attr]
            self.aliases[local] = f"{module}.{name}" if not module.endswith(".") else f"{module}{name}"

    def qualname(self, node: cst.BaseExpression) -> str | None:
        """Canonical qualified name of a dotted expression rooted at an import, else None."""
        parts = dotted_parts(node)
        if not parts or parts[0] not in self.aliases:
            return None
        return canonical(".".join([self.aliases[parts[0]], *parts[1:]]))

    def imports_module(self, prefix: str) -> bool:
        return any(q == prefix or q.startswith(prefix + ".") for q in self.aliases.values())
