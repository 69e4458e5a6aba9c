"""The analysis of one module: what every rule may ask, computed lazily and at most once."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from torchsync_lint.analysis.env import NULL_ENV, Env
from torchsync_lint.analysis.hotloops import HotContext, HotLoopAnalysis
from torchsync_lint.analysis.index import ModuleIndex
from torchsync_lint.analysis.indexer import build_index
from torchsync_lint.analysis.positions import LazyPositions
from torchsync_lint.analysis.tree import walk
from torchsync_lint.analysis.values import Kind, ValueAnalysis, source_names_accelerator, source_uses_accelerator


class ModuleAnalysis:
    """Everything the rules may ask about one module, computed lazily and at most once.

    ``env`` is what the rest of the project says about the module (analysis/env.py); the walk,
    positions and index do not depend on it, so ``with_env`` reuses them."""

    def __init__(self, module: cst.Module, source: str, env: Env = NULL_ENV, *, _base: ModuleAnalysis | None = None) -> None:
        self.module = module
        self.source = source
        self.env = env
        if _base is None:
            self.tree = walk(module)
            self.positions = LazyPositions(module, source, self.tree)
            self.index: ModuleIndex = build_index(self.tree, self.positions)
        else:
            self.tree, self.positions, self.index = _base.tree, _base.positions, _base.index
        seed = _base.values if _base is not None else None  # its answers that asked the project nothing
        # What the text mentions is the same text's: searched once (two regexes over the module).
        self._mentions = _base._mentions if _base is not None else (source_uses_accelerator(source), source_names_accelerator(source))
        self.values = ValueAnalysis(self.index, *self._mentions, env, seed=seed)
        env.bind(self)
        self._extensions: dict[str, object] = {}
        self._owns_parse = _base is None

    def release(self) -> None:
        """Break the cycles of this analysis (each part refers back to it, its memos to its
        nodes) so that reference counting frees it at once, its syntax tree too unless
        another analysis shares it: a cycle waits for the collector, and a long-lived one
        (kept across a component's lint) has moved to a generation the collector seldom
        visits, so the next module is built in fresh memory. Not usable afterwards."""
        if "values" not in self.__dict__:
            return  # released already
        parts = [self.values, *self._extensions.values(), self.__dict__.get("hot")]
        if self._owns_parse:
            parts += [self.index, self.positions, self.tree]
        for part in parts:
            fields = getattr(part, "__dict__", None)  # (an extension may be a plain value)
            if fields is not None:
                fields.clear()
        vars(self).clear()  # (the env it was bound to is its caller's: left as it is)

    def with_env(self, env: Env) -> ModuleAnalysis:
        """The same module analysed again with what other modules say about it."""
        return ModuleAnalysis(self.module, self.source, env, _base=self)

    @cached_property
    def hot(self) -> HotLoopAnalysis:
        return HotLoopAnalysis(self.index, self.values)

    # Convenience pass-throughs used by most rules.
    def qualname(self, node: cst.BaseExpression) -> str | None:
        return self.values.qualname(node)

    def kind(self, node: cst.BaseExpression) -> Kind:
        return self.values.kind(node)

    def is_device(self, node: cst.BaseExpression) -> bool:
        return self.values.is_device(node)

    def hot_context(self, node: cst.CSTNode) -> HotContext | None:
        return self.hot.hot_context(node)

    def extension(self, key: str, factory):
        """A family-specific tracker (e.g. metrics), built once per module on first use."""
        if key not in self._extensions:
            self._extensions[key] = factory(self)
        return self._extensions[key]
