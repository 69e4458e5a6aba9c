"""The rule base class and the registry every entry point reads.

A rule is a small class with ``visit_<NodeType>(node)`` methods, as in a libcst visitor; the
engine calls them for every node of that type, in source order, from the one walk it makes of
each file (analysis/tree.py), so enabled rules add no traversal of their own. Defining a
subclass with a ``code`` registers it; ``__init_subclass__`` checks that the code, the kebab
name, the message and the documentation sections are all there, so a rule cannot be
half-registered (TorchFix kept three hand-maintained lists).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from torchsync_lint.analysis import HotContext, ModuleAnalysis
from torchsync_lint.errors import FILE_ERRORS
from torchsync_lint.types import Applicability, Edit, Finding, Fix, Invalid, Valid

registry: dict[str, type[Rule]] = {}


class PositionError(Exception):
    """A reported node's position could not be computed (a pathologically deep statement)."""

_CODE = re.compile(r"^TSL[1-9]\d\d$")  # TSL9xx: about the comments (TSL900-903 are file errors)
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")
REQUIRED_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")
DOCS_URL = "https://github.com/torchsync-lint/torchsync-lint/blob/main/docs/rules.md#{code_lower}"


@dataclass
class RuleContext:
    """What a rule sees of the file being linted."""

    path: str
    module: cst.Module
    analysis: ModuleAnalysis
    settings: dict  # rule-relevant config values (e.g. "torchmetrics-version")


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]  # one sentence, code terms in backticks; may use {placeholders}
    fix_title: ClassVar[str | None] = None  # imperative, e.g. "Add `non_blocking=True`"
    runtime_observable: ClassVar[bool] = True  # the verifier must confirm its findings at runtime
    default_enabled: ClassVar[bool] = True
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return  # an abstract helper base
        doc = cls.__doc__ or ""
        problems = []
        if not _CODE.match(cls.code):
            problems.append(f"code {cls.code!r} is not TSL + 3 digits")
        if cls.code in FILE_ERRORS:
            problems.append(f"code {cls.code} is a file error code (errors.py)")
        if cls.code in registry and registry[cls.code].__qualname__ != cls.__qualname__:
            problems.append(f"code {cls.code} already used by {registry[cls.code].__qualname__}")
        if not _NAME.match(getattr(cls, "name", "")):
            problems.append("name must be kebab-case and name the hazard")
        if any(other.name == cls.name and other.code != cls.code for other in registry.values()):
            problems.append(f"name {cls.name!r} already used")
        if not getattr(cls, "message", ""):
            problems.append("message is missing")
        problems += [f"docstring lacks {s!r}" for s in REQUIRED_SECTIONS if s not in doc]
        if cls.fix_title and "## Fix safety" not in doc:
            problems.append("a fixable rule needs a '## Fix safety' section")
        if problems:
            raise TypeError(f"{cls.__name__}: " + "; ".join(problems))
        registry[cls.code] = cls

    @classmethod
    def visited_types(cls) -> dict[str, str]:
        """Node type name -> the name of the method that visits it (read once per class:
        looking the methods up per file cost more than some rules' work)."""
        table = cls.__dict__.get("_visited_types")
        if table is None:
            table = {name[len("visit_") :]: name for name in dir(cls) if name.startswith("visit_") and callable(getattr(cls, name))}
            cls._visited_types = table
        return table

    def __init__(self, context: RuleContext) -> None:
        self.context = context
        self.analysis = context.analysis
        self.reported: list[tuple[cst.CSTNode, Finding]] = []
        self.crashed = False  # set by the engine when a visit raised: its findings are dropped

    def inert(self) -> bool:
        """True when a setting or the environment keeps this rule from reporting anything in
        this run, whatever the code: its `# noqa` codes are then not judged unused (TSL904)."""
        return False

    # -- helpers for rule authors ----------------------------------------------------------
    def hot(self, node: cst.CSTNode) -> HotContext | None:
        return self.analysis.hot_context(node)

    def position(self, node: cst.CSTNode):
        try:
            return self.analysis.positions[node]
        except (RecursionError, MemoryError) as exc:
            raise PositionError(f"{type(exc).__name__} (nested too deeply)") from None

    def code_for(self, node: cst.CSTNode) -> str:
        return self.context.module.code_for_node(node)

    def snippet(self, node: cst.CSTNode, limit: int = 48) -> str:
        """``node``'s source on one line, cut to ``limit`` characters, for a message."""
        text = " ".join(self.code_for(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def edit(self, node: cst.CSTNode, replacement: cst.CSTNode | str) -> Edit:
        """An edit replacing ``node``'s source with ``replacement`` (a node or source text)."""
        rng = self.position(node)
        text = replacement if isinstance(replacement, str) else self.code_for(replacement)
        return Edit(rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1, text)

    def make_fix(self, *edits: Edit, applicability: Applicability = Applicability.SAFE, title: str | None = None, imports: tuple[str, ...] = ()) -> Fix:
        return Fix(title or self.fix_title or "", tuple(edits), applicability, imports)

    def report(self, node: cst.CSTNode, message: str | None = None, *, fix: Fix | None = None, hot: HotContext | None = None, **fmt) -> None:
        text = (message or self.message).format(**fmt)
        if hot is not None and hot.remote:
            text += f" ({hot.reason})"  # `helper` is called every step from train.py:120
        if hot is not None and hot.gate is not None:  # (a remote gate: the reason above says so)
            gate = self.code_for(hot.gate)
            # a test (`if step % N == 0:`), or an event filter (ignite's `Events.X(every=N)`)
            shown = gate if isinstance(hot.gate, cst.Call) and any(a.keyword is not None for a in hot.gate.args) else f"if {gate}:"
            text += f" (gated by `{shown}`; it still syncs on those steps)"
        rng = self.position(node)
        self.reported.append((node, Finding(
                path=self.context.path,
                line=rng.start.line,
                column=rng.start.column + 1,
                end_line=rng.end.line,
                end_column=rng.end.column + 1,
                code=self.code,
                name=self.name,
                message=text,
                fix=fix,
            )))

    # -- documentation ---------------------------------------------------------------------
    @classmethod
    def docs(cls) -> str:
        return _dedent(cls.__doc__ or "")

    @classmethod
    def section(cls, title: str) -> str:
        """The text of one '## Title' section of the docstring."""
        doc = cls.docs()
        start = doc.find(f"## {title}")
        if start < 0:
            return ""
        body = doc[start:].split("\n", 1)[1] if "\n" in doc[start:] else ""
        end = body.find("\n## ")
        return (body if end < 0 else body[:end]).strip()

    @classmethod
    def summary(cls) -> str:
        """The first paragraph of 'What it does' (the `rules` listing and the docs table);
        `explain` prints the whole docstring."""
        return " ".join(cls.section("What it does").split("\n\n", 1)[0].split())

    @classmethod
    def docs_url(cls) -> str:
        return DOCS_URL.format(code_lower=cls.code.lower())


def _dedent(text: str) -> str:
    import inspect

    return inspect.cleandoc(text)


def load_rules() -> dict[str, type[Rule]]:
    """Import every rule family so that the registry is complete."""
    import torchsync_lint.rules  # noqa: F401  (registers on import)

    return dict(sorted(registry.items()))
