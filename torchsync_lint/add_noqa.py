"""`check --add-noqa`: suppress every current finding in place, as ruff's `--add-noqa` does.

The adoption path on an existing codebase: run it once, commit, and from then on only new
findings fail CI; each added `# noqa: TSL…` marks a sync to look at later.

- The directive goes on the line the finding is reported on. When that line cannot end in a
  comment (it ends inside a multi-line string, or with a `\\` continuation), it goes on the
  next line of the same statement that can: suppression reads `# noqa` on any line of the
  statement (suppress.py), so the finding is still silenced and no string is broken.
- An existing `# noqa: E501` becomes `# noqa: E501, TSL101`; any other comment on the line is
  kept and the directive is appended after it. Several findings on one line share one
  directive.
- Nothing is written unless the result still parses; the file is re-linted to check that
  every finding is silenced (any that is not is reported). Files are written atomically in
  their own encoding (notebooks: only the edited cells' lines change). A second run adds
  nothing.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from dataclasses import dataclass, field
from functools import partial

from torchsync_lint import suppress
from torchsync_lint.lines import split_ends
from torchsync_lint.types import Finding
from torchsync_lint.unused_noqa import CODE as UNUSED

# `# noqa: E501, W291` with its codes (codes are letters then digits, as flake8 and ruff read them).
_NOQA_CODES = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*)", re.I)
_BARE_NOQA = re.compile(r"#\s*noqa(?!\s*:)", re.I)


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int]:
    """``text`` with a `# noqa` directive for every finding, and how many lines got one.
    Each line keeps its own ending (`\\n`, `\\r\\n` or an old Mac `\\r`)."""
    lines = split_ends(text)  # as Python's tokenizer (and so the findings' lines) counts them
    try:
        # tokenize reads `\n` line ends only: it sees the same lines, each ending in one.
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(body + "\n" for body, _ in lines)).readline))
    except (tokenize.TokenError, SyntaxError):
        return text, 0
    line_ends = {t.start[0] for t in tokens if t.type in (tokenize.NEWLINE, tokenize.NL)}
    comments = {t.start[0]: t for t in tokens if t.type == tokenize.COMMENT}
    last = max(line_ends, default=0)
    wanted: dict[int, set[str]] = {}
    for f in findings:
        if f.severity == "error" or f.code == UNUSED:
            continue  # a stale suppression is removed by `--fix`, not kept by another one
        line = f.line
        while line not in line_ends and line < last:
            line += 1  # the string or continuation goes on; the statement ends on a later line
        wanted.setdefault(line, set()).add(f.code)
    added = 0
    for number, codes in sorted(wanted.items()):
        if not 0 < number <= len(lines):
            continue
        body, ending = lines[number - 1]
        new = _with_directive(body, comments.get(number), codes)
        if new != body:
            lines[number - 1] = (new, ending)
            added += 1
    return "".join(body + ending for body, ending in lines), added


def _with_directive(body: str, comment: tokenize.TokenInfo | None, codes: set[str]) -> str:
    """The line ``body`` (without its ending) with a directive for ``codes``."""
    if comment is not None:
        m = _NOQA_CODES.search(comment.string)
        if m is not None:
            present = {c.upper() for c in re.split(r"[\s,]+", m.group("codes")) if c}
            new = sorted(c for c in codes if not suppress.matches(c, present))
            if not new:
                return body
            at = comment.start[1] + m.end("codes")
            return body[:at] + ", " + ", ".join(new) + body[at:]
        if _BARE_NOQA.search(comment.string):
            return body  # a bare `# noqa` already silences everything on the line
    return body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))


# -- the command ---------------------------------------------------------------------------------

@dataclass
class NoqaOutcome:
    path: str
    added: int = 0
    errors: list[Finding] = field(default_factory=list)  # TSL90x: the file could not be linted
    unsilenced: list[Finding] = field(default_factory=list)
    problem: str | None = None  # not written, and why
    outside: tuple[str, str] | None = None  # (target, root): not written, outside the project (write_scope.py)
    kept: list[Finding] = field(default_factory=list)  # the findings left unsilenced with it


def run_add_noqa(args, config, paths: list[str]) -> int:
    from torchsync_lint import api
    from torchsync_lint.errors import file_error
    from torchsync_lint.files import discover
    from torchsync_lint.fixing import write_scope

    if paths == ["-"]:
        print("torchsync-lint: error: --add-noqa edits files in place; it cannot read stdin", file=sys.stderr)
        return 2
    files, bad = discover(paths, config)
    outcomes = [NoqaOutcome(p, errors=[file_error(p, e.code, e.message)]) for p, e in bad]
    work = partial(_add_noqa_file, config=config, named=write_scope.named_targets(paths))
    outcomes += api.map_in_sessions(work, files, config, getattr(args, "jobs", None), use_cache=not getattr(args, "no_cache", False))
    for o in outcomes:
        for e in o.errors:
            print(f"{e.location}: {e.code} {e.message}", file=sys.stderr)
        for f in o.unsilenced:
            print(f"{f.location}: {f.code} could not be silenced with a `# noqa` comment", file=sys.stderr)
        if o.problem:
            print(f"{o.path}: {o.problem}; nothing was added", file=sys.stderr)
        if o.outside:
            print(write_scope.warning(o.path, o.outside), file=sys.stderr)
            for f in o.kept:
                print(f"{f.location}: {f.code} {f.message}", file=sys.stderr)
    total = sum(o.added for o in outcomes)
    files_changed = sum(1 for o in outcomes if o.added)
    print(f"Added {total} noqa directive{'' if total == 1 else 's'} in {files_changed} file{'' if files_changed == 1 else 's'}.", file=sys.stderr)
    if any(o.errors or o.problem for o in outcomes):
        return 2
    return 1 if any(o.unsilenced or o.kept for o in outcomes) else 0


def _add_noqa_file(path: str, config, named: frozenset[str] = frozenset()) -> NoqaOutcome:
    """Each file in its project session: a finding that needs another module is silenced
    as `check` reports it. A file that would be written outside its project root (a symlink
    out, not named itself: write_scope.py) is left as it is, its findings reported."""
    from torchsync_lint import api, sources
    from torchsync_lint.errors import file_error
    from torchsync_lint.atomic import WriteError
    from torchsync_lint.files import ReadError, write_source
    from torchsync_lint.fixing import write_scope
    from torchsync_lint.fixing.loop import validate
    from torchsync_lint.notebook import NotebookError

    outcome = NoqaOutcome(path)
    try:
        source = sources.read(path)
    except ReadError as exc:
        outcome.errors = [file_error(path, exc.code, exc.message)]
        return outcome
    if source.python is None:
        return outcome
    text = source.python
    with api.session_for(path, config).editing(path) as lint:
        findings = lint(text)
        outcome.errors = [f for f in findings if f.severity == "error"]
        if outcome.errors:
            outcome.errors = source.file_errors([source.to_file(e) for e in outcome.errors], path)
            return outcome
        new_text, added = add_noqa(text, findings)
        if not added:
            # Nothing could be added (no line that can end in a comment): every finding stays.
            outcome.unsilenced = [source.to_file(f) for f in findings if f.severity != "error" and f.code != UNUSED]
            return outcome
        problem = validate(new_text, path, must_compile=False)
        if problem is not None:
            outcome.problem = problem
            return outcome
        outcome.unsilenced = [source.to_file(f, new_text) for f in lint(new_text) if f.severity != "error" and f.code != UNUSED]
    outside = write_scope.outside_target(path, named)
    if outside:
        outcome.outside, outcome.unsilenced = outside, []
        outcome.kept = [source.to_file(f) for f in findings if f.severity != "error"]
        return outcome
    try:
        write_source(path, source.write_back(new_text), source.file, retry="run --add-noqa again")
    except (NotebookError, WriteError) as exc:
        outcome.problem = str(exc)
        return outcome
    outcome.added = added
    return outcome
