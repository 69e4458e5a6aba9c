"""`torchsync-lint --fix` / `--diff`: files in, fixed files (or a diff) out.

- `--fix` applies SAFE fixes (plus UNSAFE ones with `--unsafe-fixes` or `unsafe-fixes = true`),
  writes each changed file atomically and prints what was fixed, what remains, and the
  remaining findings. Exit 1 when findings remain, else 0 (2 when a file could not be read
  and nothing remains).
- `--diff` prints a unified diff of exactly what `--fix` (with the same `--unsafe-fixes`)
  would write, and writes nothing: `patch -p0` or `git apply -p0` applies it. SUGGESTION
  fixes are never in it (they are not what `--fix` does); the summary counts them and
  `--show-suggestions` lists them as text. Exit 1 when there is a diff, else 0.

A file is rewritten only when its text changes, in its own encoding (a BOM is kept), newline
style and permission bits, atomically (atomic.py: a full disk, an error or Ctrl-C leaves the
old bytes or the new ones, never a mix, and so does a crash, except during the in-place
rewrite of a file with hard links; a file edited since it was read is left alone). A
read-only file or an unwritable directory is reported on one line and skipped; the other
files are still fixed.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections import Counter
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial

from torchsync_lint import sources
from torchsync_lint.atomic import WriteError
from torchsync_lint.errors import file_error
from torchsync_lint.files import ReadError, SourceFile, decode_source, discover, read_stdin_bytes, write_source
from torchsync_lint.fixing import write_scope
from torchsync_lint.fixing.loop import MAX_ROUNDS, FixResult, fix_source
from torchsync_lint.lines import split_lf
from torchsync_lint.notebook import NotebookError, is_notebook
from torchsync_lint.output import write_report
from torchsync_lint.types import Applicability, FileResult, Finding


@dataclass
class FileOutcome:
    path: str
    source: SourceFile | None = None
    result: FixResult | None = None
    errors: list[Finding] = field(default_factory=list)  # TSL90x: could not read the file
    write_error: str | None = None
    outside: tuple[str, str] | None = None  # (target, root): its fixes would write outside the project (write_scope.py)

    @property
    def unwritten(self) -> bool:
        """Its fixes were not written (could not be, or may not be)."""
        return self.write_error is not None or self.outside is not None

    @property
    def remaining(self) -> list[Finding]:
        if self.result is None:
            return []
        if self.unwritten:
            return [f for f in self.result.initial if f.severity != "error"]  # nothing was written
        return [f for f in self.result.remaining if f.severity != "error"]

    @property
    def fixed(self) -> list[Finding]:
        if self.result is None or self.unwritten:
            return []
        return self.result.applied


def run_fix_command(args, config, paths, *, lint_factory=None) -> int:
    """Entry point for `--fix` and `--diff`. ``lint_factory(path, config)`` -> text -> findings
    replaces the real engine in tests."""
    unsafe = bool(getattr(config, "unsafe_fixes", False))
    diff_mode = bool(getattr(args, "diff", False))
    if paths == ["-"]:
        return _run_stdin(args, config, unsafe, diff_mode, lint_factory)
    files, bad = discover(paths, config)
    outcomes = [FileOutcome(p, errors=[file_error(p, e.code, e.message)]) for p, e in bad]
    named = write_scope.named_targets(paths)
    outcomes += _fix_files(files, config, unsafe, diff_mode, lint_factory, getattr(args, "jobs", None), not getattr(args, "no_cache", False), named)
    if diff_mode:
        return _report_diff(args, outcomes)
    return _report_fix(args, config, outcomes, unsafe)


def _fix_files(files: list[str], config, unsafe: bool, diff_mode: bool, lint_factory, jobs: int | None = None, use_cache: bool = True, named: frozenset[str] = frozenset()) -> list[FileOutcome]:
    """Fix each file (in worker processes when there are many), each in its project session:
    every file is fixed against the project as it is on disk plus its own edits, whatever the
    order or the number of processes."""
    if lint_factory is not None:  # a test's closure, which cannot be sent to a worker
        return [_fix_file(path, config, unsafe, diff_mode, lint_factory(path, config), named=named) for path in files]
    from torchsync_lint import api

    work = partial(_fix_in_session, config=config, unsafe=unsafe, diff_mode=diff_mode, named=named)
    return api.map_in_sessions(work, files, config, jobs, use_cache=use_cache)


def _fix_in_session(path: str, config, unsafe: bool, diff_mode: bool, named: frozenset[str] = frozenset()) -> FileOutcome:
    from torchsync_lint import api

    with api.session_for(path, config).editing(path) as lint:
        return _fix_file(path, config, unsafe, diff_mode, lint, named=named)


def _fix_file(path: str, config, unsafe: bool, diff_mode: bool, lint, *, text: str | None = None, named: frozenset[str] = frozenset()) -> FileOutcome:
    """Fix the module of the Source at ``path`` (sources.py: a notebook's Python view) and
    write it back into the file (a notebook: only the edited cells change), atomically.
    ``text``: the file's content, already read (stdin). A file whose write would land
    outside its project root (a symlink out; write_scope.py) is fixed in memory, not written
    (nor in a diff), unless its target is in ``named``."""
    if hasattr(config, "for_path"):
        unsafe = config.for_path(path).unsafe_fixes  # the file's own setting (the command line's over it)
    try:
        source = sources.read(path, text)
    except ReadError as exc:
        return FileOutcome(path, errors=[file_error(path, exc.code, exc.message)])
    if source.python is None:  # a notebook in another language, or without code cells
        return FileOutcome(path, source.file, FixResult(source.file.text))
    result = fix_source(source.python, path, config, unsafe, lint=lint)
    outcome = FileOutcome(path, source.file, result)
    view, new_text, problem = result.new_source, source.file.text, None
    if view != source.python:
        try:
            new_text = source.write_back(view)
        except NotebookError as exc:
            problem = f"cannot write the fixes back into the cells: {exc}"
    result.new_source = new_text
    result.initial = [source.to_file(f) for f in result.initial]
    result.applied = [source.to_file(f) for f in result.applied]
    result.refused = [(source.to_file(f), why) for f, why in result.refused]
    result.remaining = result.initial if problem else [source.to_file(f, view) for f in result.remaining]
    outcome.errors = source.file_errors([f for f in result.initial if f.severity == "error"], path)
    if problem:
        outcome.write_error = problem
    elif new_text != source.file.text and text is None and (outside := write_scope.outside_target(path, named)):
        outcome.outside = outside
    elif not diff_mode and new_text != source.file.text:
        try:
            write_source(path, new_text, source.file)
        except WriteError as exc:
            outcome.write_error = str(exc)
    return outcome


# -- diff -----------------------------------------------------------------------------------

class DiffError(ValueError):
    """The change cannot be shown as a diff that `patch` would apply."""


def unified_diff(old: str, new: str, path: str, encoding: str = "utf-8") -> bytes:
    """A unified diff that `patch -p0` and `git apply -p0` turn into exactly the bytes
    `--fix` writes: the lines are the file's lines as those tools read them (split at `\\n`
    only: an old Mac file ending its lines in `\\r` is one line to them), in the file's own
    encoding, with the BOM of a UTF-8-with-BOM file at the start of its first line; a last
    line without an ending is marked as diff does. DiffError when the text cannot be written
    in the file's encoding (then `--fix` could not write it either)."""
    codec = "utf-8" if encoding.lower().replace("_", "-") == "utf-8-sig" else encoding
    if codec != encoding:
        old, new = "\ufeff" + old, "\ufeff" + new
    out = []
    for n, line in enumerate(difflib.unified_diff(split_lf(old), split_lf(new), fromfile=path, tofile=path)):
        try:
            data = os.fsencode(line) if n < 2 else line.encode(codec)  # `--- path`, `+++ path`
        except (UnicodeEncodeError, LookupError) as exc:
            raise DiffError(f"its fixed text cannot be written in the file's encoding ({encoding}): {exc}") from exc
        out.append(data if line.endswith("\n") else data + b"\n\\ No newline at end of file\n")
    return b"".join(out)


def _report_diff(args, outcomes: list[FileOutcome]) -> int:
    chunks: list[bytes] = []
    fixed = Counter()
    files_changed = 0
    for o in outcomes:
        for e in o.errors:
            print(f"{e.path}: {e.code} {e.message}", file=sys.stderr)
        if o.result is None:
            continue
        _report_problems(o, sys.stderr)
        if o.outside is not None:
            continue
        try:
            text = unified_diff(o.source.text, o.result.new_source, o.path, o.source.encoding)
        except DiffError as exc:
            print(f"{o.path}: cannot show the fixes as a diff: {exc}", file=sys.stderr)
            continue
        if text:
            files_changed += 1
            fixed.update(f.code for f in o.result.applied)
            chunks.append(text)
    _emit(b"".join(chunks), getattr(args, "output_file", None))
    if not getattr(args, "quiet", False):
        total = sum(fixed.values())
        line = f"Would fix {_count(total, 'finding')}{_per_code(fixed)} in {_count(files_changed, 'file')}."
        suggestions = sum(1 for o in outcomes for f in o.remaining if f.fix is not None and f.fix.applicability is Applicability.SUGGESTION)
        if suggestions:
            line += f" {_count(suggestions, 'suggestion')} not in the diff (never applied): `--show-suggestions` lists them."
        print(line, file=sys.stderr)
    if getattr(args, "exit_zero", False):
        return 0
    if chunks:
        return 1
    return 2 if any(o.errors for o in outcomes) else 0


# -- fix summary ------------------------------------------------------------------------------

def _report_fix(args, config, outcomes: list[FileOutcome], unsafe: bool) -> int:
    from torchsync_lint.reporters import load_formats

    fmt = getattr(args, "format", "text") or "text"
    summary_stream = sys.stdout if fmt == "text" and not getattr(args, "output_file", None) else sys.stderr
    fixed = Counter(f.code for o in outcomes for f in o.fixed)
    remaining = Counter(f.code for o in outcomes for f in o.remaining)
    files_fixed = sum(1 for o in outcomes if o.fixed)
    for o in outcomes:
        _report_problems(o, sys.stderr)
    quiet = getattr(args, "quiet", False)
    fix_only = getattr(args, "fix_only", False)  # as ruff: what remains is not reported
    if fix_only:
        remaining = Counter()
    if not quiet:
        print(f"Fixed {_count(sum(fixed.values()), 'finding')}{_per_code(fixed)} in {_count(files_fixed, 'file')}.", file=summary_stream)
    if getattr(args, "show_fixes", False) and fixed:
        print(_show_fixes(outcomes), end="", file=summary_stream)
    if remaining and not quiet:
        hint = _unsafe_hint(outcomes, unsafe)
        print(f"{_count(sum(remaining.values()), 'finding')} remain{'s' if sum(remaining.values()) == 1 else ''}{_per_code(remaining)}{hint}.", file=summary_stream)
    results = []
    for o in outcomes:
        shown = o.source
        if o.result is not None and not o.unwritten:
            shown = replace(o.source, text=o.result.new_source)
        results.append(FileResult(o.path, [] if fix_only else o.remaining, o.errors, shown))
    if remaining or any(o.errors for o in outcomes):
        options = {"color": False, "quiet": quiet, "statistics": False, "unsafe_fixes": unsafe}
        formats = load_formats()
        _emit(formats[fmt](results, options), getattr(args, "output_file", None))
    if getattr(args, "exit_zero", False):
        return 0
    if getattr(args, "exit_non_zero_on_fix", False) and files_fixed:
        return 1
    if remaining:
        return 1
    return 2 if any(o.errors or o.write_error for o in outcomes) else 0


def _show_fixes(outcomes: list[FileOutcome]) -> str:
    """`--show-fixes`: the fixes applied, per file, as ruff lists them."""
    lines = [f"Fixed {_count(sum(len(o.fixed) for o in outcomes), 'finding')}:"]
    for o in sorted((o for o in outcomes if o.fixed), key=lambda o: o.path):
        lines.append(f"- {o.path}:")
        for (code, name), n in sorted(Counter((f.code, f.name) for f in o.fixed).items()):
            lines.append(f"    {n} x {code} ({name})")
    return "".join(line + "\n" for line in lines)


def _unsafe_hint(outcomes, unsafe: bool) -> str:
    if unsafe:
        return ""
    n = sum(1 for o in outcomes for f in o.remaining if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
    return f" ({n} fixable with `--fix --unsafe-fixes`)" if n else ""


def _report_problems(o: FileOutcome, stream) -> None:
    """One line per refused fix, non-convergence and write failure."""
    if o.result is not None:
        for finding, reason in o.result.refused:
            print(f"{finding.location}: {finding.code} fix refused: {reason}", file=stream)
        if not o.result.converged:
            print(f"{o.path}: fixes did not converge after {o.result.rounds} of at most {MAX_ROUNDS} rounds; the last valid result was kept", file=stream)
    if o.write_error is not None:
        print(f"{o.path}: {o.write_error}; its fixes were not applied", file=stream)
    if o.outside is not None:
        print(write_scope.warning(o.path, o.outside), file=stream)


def _run_stdin(args, config, unsafe: bool, diff_mode: bool, lint_factory) -> int:
    path = getattr(args, "stdin_filename", None) or "-"
    output_file = getattr(args, "output_file", None)
    try:
        data = read_stdin_bytes()
        source = decode_source(data)
    except ReadError as exc:
        print(f"{path}: {exc.code} {exc.message}", file=sys.stderr)
        if not diff_mode and exc.code == "TSL901":  # an editor replaces its buffer with stdout:
            write_report(data, output_file)  # hand the input back unchanged
        return 0 if getattr(args, "exit_zero", False) else 2
    text = source.text
    with _stdin_lint(path, data, config, lint_factory, not getattr(args, "no_cache", False)) as lint:
        if is_notebook(path):
            o = _fix_file(path, config, unsafe, True, lint, text=text)  # diff_mode: writes nothing
            if o.result is None:  # not a notebook (TSL901)
                for e in o.errors:
                    print(f"{e.location}: {e.code} {e.message}", file=sys.stderr)
                return 2
        else:
            o = FileOutcome(path, source, fix_source(text, path, config, unsafe, lint=lint))
    result = o.result
    _report_problems(o, sys.stderr)
    try:
        if diff_mode:
            diff = unified_diff(text, result.new_source, path, source.encoding)
            _emit(diff, output_file)
            return 0 if getattr(args, "exit_zero", False) or not diff else 1
        # An editor replaces its buffer with these bytes: in the encoding it sent.
        _emit(result.new_source.encode(source.encoding), output_file)
    except (DiffError, UnicodeEncodeError) as exc:
        print(f"{path}: cannot write the fixed text in its encoding ({source.encoding}): {exc}", file=sys.stderr)
        write_report(data, output_file)  # hand the input back unchanged
        return 0 if getattr(args, "exit_zero", False) else 2
    remaining = [f for f in result.remaining if f.severity != "error"]
    for f in remaining:
        print(f"{f.location}: {f.code} {f.message}", file=sys.stderr)
    return 0 if getattr(args, "exit_zero", False) or not remaining else 1


@contextmanager
def _stdin_lint(path: str, data: bytes, config, lint_factory, use_cache: bool = True):
    """The lint of stdin's rounds: as ``path`` (its --stdin-filename) in its project, stdin
    standing for the file; alone when stdin has no name."""
    if lint_factory is not None or path == "-":
        yield lint_factory(path, config) if lint_factory is not None else None
        return
    from torchsync_lint.project.sessions import Sessions

    with closing(Sessions.for_files([path], config, use_cache=use_cache).session_for(path)) as session:  # (its parsed modules freed at the end)
        session.set_source(path, data)
        with session.editing(path) as lint:
            yield lint


def _emit(text: str | bytes, output_file: str | None) -> None:
    if text:
        write_report(text, output_file)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _per_code(counter: Counter) -> str:
    if not counter:
        return ""
    return " (" + ", ".join(f"{code}: {n}" for code, n in sorted(counter.items())) + ")"
