"""Which rules are on: ruff's rule-selection resolution over the sources of selectors.

A source is one `select` / `extend-select` / `ignore` triple: the configuration file's, then
the command line's. The sources are applied in that order, as ruff applies them:

- within one source the selectors are applied from the least specific to the most specific
  (`ALL`, then `TSL`, `TSL1`, `TSL10`, then a full code or a rule name), and at one
  specificity the ignores after the selects: so `ignore = ["TSL3"]` with
  `extend-select = ["TSL301"]` turns TSL301 on, and `ignore = ["TSL301"]` with
  `select = ["TSL301"]` turns it off;
- a source with `select` replaces what the sources before it chose; one without it (only
  `extend-select` / `ignore`) changes what they chose: so the command line's selectors win
  over the file's whatever their specificity (`--extend-select TSL1` re-enables a TSL101
  the file ignores);
- as in ruff, a source whose `select` is empty (`select = []`) and which ignores something
  carries its ignores over to the next source's selection.

The first source starts from ``default``: every rule that is on by default (`check`), or
what flake8 selected (the plugin). Per-file ignores are subtracted afterwards (config.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field


class SelectorError(ValueError):
    """A selector that names no rule (config.ConfigError wraps it)."""


@dataclass
class Selection:
    """One source's selectors; ``select`` None: the source does not replace the selection."""

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.select is not None or bool(self.extend_select or self.ignore)


def expand(selectors: list[str], rules: dict) -> set[str]:
    """Codes named by selectors; an unknown selector is an error, not a silent no-op."""
    codes: set[str] = set()
    for raw in selectors:
        codes |= _expand_one(raw, rules)
    return codes


def _expand_one(raw: str, rules: dict) -> set[str]:
    sel = raw.strip()
    if not sel:
        return set()
    if sel.upper() == "ALL":
        return set(rules)
    by_name = {rule.name: code for code, rule in rules.items()}
    if sel in by_name:
        return {by_name[sel]}
    matched = {code for code in rules if code.startswith(sel.upper())}
    if not matched:
        raise SelectorError(f"unknown rule selector {raw!r} (use a code like TSL101, a prefix like TSL1, a rule name, or ALL)")
    return matched


def specificity(raw: str, rules: dict) -> int:
    """How specific a selector is: `ALL` 0, a prefix its length (`TSL` 3, `TSL1` 4), a full
    code or a rule name the length of the code (ruff's Specificity, for codes shaped `TSL123`)."""
    sel = raw.strip()
    if sel.upper() == "ALL":
        return 0
    for code, rule in rules.items():
        if rule.name == sel:
            return len(code)
    return len(sel)


def resolve(sources: list[Selection], rules: dict, default: set[str]) -> set[str]:
    """The codes on after applying ``sources`` in order to ``default`` (see the module doc)."""
    chosen = set(default)
    carried: list[str] = []
    for source in sources:
        ignores = [*source.ignore, *carried]
        carried = []
        steps = [(sel, True) for sel in [*(source.select or []), *source.extend_select]] + [(sel, False) for sel in ignores]
        updates: dict[str, bool] = {}
        # sorted() is stable: at one specificity the selects (listed first) come before the ignores
        for sel, on in sorted(steps, key=lambda step: specificity(step[0], rules)):
            for code in _expand_one(sel, rules):
                updates[code] = on
        if source.select is not None:
            chosen = {code for code, on in updates.items() if on}
            if not source.select and not source.extend_select and source.ignore:
                carried = list(source.ignore)
        else:
            chosen |= {code for code, on in updates.items() if on}
            chosen -= {code for code, on in updates.items() if not on}
    return chosen
