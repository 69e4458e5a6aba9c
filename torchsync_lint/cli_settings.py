"""The command line's settings (`check`): its options turned into settings.Overrides, in
ruff's syntax, and a "did you mean" for an option argparse does not know."""

from __future__ import annotations

import argparse
import difflib
import os

from torchsync_lint.config import ConfigError
from torchsync_lint.selection import Selection
from torchsync_lint.settings import Overrides


def split_list(value: str | None) -> list[str]:
    """`a,b c` -> [a, b, c]: a comma or a space separates (ruff takes commas)."""
    return [s for s in (value or "").replace(" ", ",").split(",") if s]


def split_patterns(values: list[str] | None) -> list[str]:
    """Comma-separated glob patterns of repeated options; a comma inside `{a,b}` is part of
    its pattern."""
    out: list[str] = []
    for value in values or []:
        out += [p for p in _split_outside_braces(value) if p.strip()]
    return [p.strip() for p in out]


def _split_outside_braces(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def per_file_ignores(values: list[str] | None, option: str) -> dict[str, list[str]] | None:
    """`PATTERN:CODES` items (`tests/*:TSL101,TSL102`; ruff's `a:X,b:Y` too), merged; None when
    the option was not given. A value without `:` is a ConfigError (exit 2)."""
    if values is None:
        return None
    merged: dict[str, list[str]] = {}
    for value in values:
        pattern = None
        for token in _split_outside_braces(value):
            token = token.strip()
            if not token:
                continue
            if ":" in token:
                pattern, _, codes = token.rpartition(":")
                pattern = pattern.strip()
                if not pattern:
                    raise ConfigError(f"{option} {value!r}: expected PATTERN:CODES, such as 'tests/*:TSL101,TSL102'")
                merged.setdefault(pattern, [])
                token = codes
            elif pattern is None:
                raise ConfigError(f"{option} {value!r}: expected PATTERN:CODES, such as 'tests/*:TSL101,TSL102'")
            merged[pattern] += split_list(token)
    return merged


def overrides_from(args) -> Overrides:
    """The settings `check`'s options give, over every file's configuration."""
    selection = Selection(
        split_list(args.select) if args.select else None,
        split_list(args.extend_select),
        split_list(args.ignore),
    )
    return Overrides(
        selection=selection,
        exclude=split_patterns(args.exclude) if args.exclude is not None else None,
        extend_exclude=split_patterns(args.extend_exclude),
        per_file_ignores=per_file_ignores(args.per_file_ignores, "--per-file-ignores"),
        extend_per_file_ignores=per_file_ignores(args.extend_per_file_ignores, "--extend-per-file-ignores") or {},
        unsafe_fixes=args.unsafe_fixes,
        force_exclude=args.force_exclude,
        respect_gitignore=args.respect_gitignore,
        cache_dir=os.path.abspath(args.cache_dir) if args.cache_dir else None,
    )


class SuggestingParser(argparse.ArgumentParser):
    """argparse, with `did you mean '--select'?` after an unrecognized option."""

    def error(self, message: str):
        if "unrecognized arguments:" in message:
            known = sorted({opt for parser in _parsers(self) for action in parser._actions for opt in action.option_strings if opt.startswith("--")})
            for word in message.split("unrecognized arguments:", 1)[1].split():
                if word.startswith("--"):
                    close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.75)
                    if close:
                        message += f"; did you mean '{close[0]}'?"
                        break
        super().error(message)


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)
