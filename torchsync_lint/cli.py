"""`torchsync-lint`: check (default), rules, explain, verify, server. Owns I/O and exit codes.

Exit codes: 0 clean, 1 findings, 2 usage error, internal error, or only files that could
not be linted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from torchsync_lint import __version__
from torchsync_lint.output import write_report

SUBCOMMANDS = ("check", "rules", "explain", "verify", "server")


def positive_int(text: str) -> int:
    """An argument that counts something (`--jobs`): a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _add_check_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .); `-` reads stdin")
    p.add_argument("--select", help="comma-separated codes, prefixes (TSL1), rule names or ALL")
    p.add_argument("--extend-select", help="add to the selected rules")
    p.add_argument("--ignore", help="comma-separated codes, prefixes or names to skip")
    p.add_argument("--output-format", "--format", dest="format", default="text", help="text (default), concise, json, sarif, github or junit")
    p.add_argument("--output-file", "-o", help="write the report here instead of stdout")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument("--quiet", "-q", action="store_true", help="print the findings only: no source snippets, no summary")
    p.add_argument("--silent", action="store_true", help="print nothing; the exit code says what was found (errors that exit 2 are still printed)")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--fix-only", action="store_true", help="apply fixes and report nothing that remains; exit 0 unless a file could not be fixed")
    p.add_argument("--show-fixes", action="store_true", help="with --fix: list the fixes applied, per file")
    p.add_argument("--exit-non-zero-on-fix", action="store_true", help="with --fix: exit 1 when a file was changed, even if nothing remains")
    p.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply (or show) unsafe fixes")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff, write nothing")
    p.add_argument("--config", help="read this pyproject.toml instead of discovering one")
    p.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    p.add_argument("--force-exclude", action="store_true", default=None, help="apply exclude/extend-exclude to paths named on the command line too (for pre-commit)")
    p.add_argument("--stdin-filename", help="lint stdin, reported (and configured) as this path")
    p.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None, help="skip files that .gitignore/.ignore exclude in directory walks (default: on)")
    p.add_argument("--show-settings", action="store_true", help="print the settings in force for the first file and exit")
    p.add_argument("--show-files", action="store_true", help="print the files that would be linted and exit")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache in .torchsync_cache/")
    p.add_argument("--cache-dir", metavar="DIR", help="keep the cache here (one folder per project) instead of <project root>/.torchsync_cache")
    # File selection and per-file ignores, as ruff's options: over every file's configuration.
    p.add_argument("--exclude", action="append", metavar="PATTERNS", help="comma-separated glob patterns that replace `exclude` (repeatable)")
    p.add_argument("--extend-exclude", action="append", metavar="PATTERNS", help="comma-separated glob patterns added to `extend-exclude` (repeatable)")
    p.add_argument("--per-file-ignores", action="append", metavar="PATTERN:CODES", help="`tests/*:TSL101,TSL102`: replaces `per-file-ignores` (repeatable)")
    p.add_argument("--extend-per-file-ignores", action="append", metavar="PATTERN:CODES", help="like --per-file-ignores, added to those of the configuration")
    p.add_argument(
        "--jobs", "-j", type=positive_int, default=None, metavar="N",
        help="worker processes for 16 or more files (default: $TORCHSYNC_JOBS, else one per core, at most 8)",
    )
    # Modes that replace the report (torchsync_lint/add_noqa.py, suggestions.py).
    p.add_argument("--add-noqa", action="store_true", help="add `# noqa: TSLxxx` to the line of every finding (adopting on an existing codebase)")
    p.add_argument("--show-suggestions", action="store_true", help="list the rewrites --fix never applies, as text (not a patch)")


def build_parser() -> argparse.ArgumentParser:
    from torchsync_lint.cli_settings import SuggestingParser

    parser = SuggestingParser(
        prog="torchsync-lint",
        description="Find, fix and prove hidden CPU-GPU syncs in PyTorch training code.",
    )
    parser.add_argument("--version", action="version", version=f"torchsync-lint {__version__}")
    sub = parser.add_subparsers(dest="command")
    _add_check_arguments(sub.add_parser("check", help="lint files (the default command)"))
    rules = sub.add_parser("rules", help="list every rule")
    rules.add_argument("--format", default="text", choices=("text", "json", "markdown"))
    explain = sub.add_parser("explain", help="print a rule's documentation")
    explain.add_argument("rule", help="a code (TSL101) or a name (host-read-in-loop)")
    from torchsync_lint import server as server_pkg  # no pygls import until it runs

    server_pkg.add_arguments(sub.add_parser("server", help="run the language server (LSP over stdio) for editors"))
    verify = sub.add_parser("verify", help="replay fixture scripts and confirm findings at runtime")
    try:
        from torchsync_lint import verify as verify_pkg  # imports torch lazily, inside run()

        verify_pkg.add_arguments(verify)
    except ImportError:  # pragma: no cover - only before the verifier lands
        verify.set_defaults(verify_missing=True)
    return parser


def _unknown_subcommand(first: str) -> bool:
    """`torchsync-lint chek src` is a typo, not a path: a first argument that is no
    subcommand, no option and no existing path, and looks like a word (no `.`, `/` or `-`
    prefix: `train.py`, `src/` and `../x` stay paths, reported as TSL902 when missing)."""
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", first)) and not os.path.exists(first)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in SUBCOMMANDS and _unknown_subcommand(argv[0]):
        import difflib

        close = difflib.get_close_matches(argv[0], SUBCOMMANDS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f" (and no file or directory of that name exists; subcommands: {', '.join(SUBCOMMANDS)})"
        print(f"torchsync-lint: error: unrecognized subcommand '{argv[0]}'{hint}", file=sys.stderr)
        return 2
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "check")
    script_args: list[str] = []
    if argv[0] == "verify":
        from torchsync_lint.verify import split_script_args

        argv, script_args = split_script_args(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    args.script_args = script_args
    try:
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "explain":
            return cmd_explain(args)
        if args.command == "server":
            from torchsync_lint import server as server_pkg

            return server_pkg.run(args)
        if args.command == "verify":
            if getattr(args, "verify_missing", False):
                print("torchsync-lint: the verifier is not installed in this build", file=sys.stderr)
                return 2
            from torchsync_lint import verify as verify_pkg

            return verify_pkg.run(args)
        if args.silent:
            return _silently(cmd_check, args)
        return cmd_check(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - a clear one-line error, never a traceback
        from torchsync_lint.config import ConfigError
        from torchsync_lint.output import OutputError

        if isinstance(exc, (ConfigError, OutputError)):
            print(f"torchsync-lint: error: {exc}", file=sys.stderr)
            return 2
        if os.environ.get("TORCHSYNC_DEBUG"):
            raise
        print(f"torchsync-lint: internal error: {type(exc).__name__}: {exc} (set TORCHSYNC_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2


def _resolve_config(args):
    """The run's settings (settings.py: each file gets its nearest configuration's, with the
    command line's over them) and the paths to lint."""
    from torchsync_lint.cli_settings import overrides_from
    from torchsync_lint.settings import settings_for

    paths = args.paths or ["."]
    if args.stdin_filename:  # as ruff: --stdin-filename always means stdin
        for path in args.paths:
            if path != "-":
                print(f"torchsync-lint: warning: ignoring file {path} in favor of standard input", file=sys.stderr)
        paths = ["-"]
    config = settings_for(args.config, args.isolated, overrides_from(args))  # (selectors checked: ConfigError -> exit 2)
    return config, paths


def cmd_check(args) -> int:
    from torchsync_lint.api import lint_file, lint_paths
    from torchsync_lint.reporters import load_formats

    config, paths = _resolve_config(args)
    formats = load_formats()
    if args.format not in formats:
        print(f"torchsync-lint: error: unknown format {args.format!r} (choose from {', '.join(sorted(formats))})", file=sys.stderr)
        return 2
    if args.show_settings or args.show_files:
        return _show(args, config, paths)
    if args.statistics and args.format not in ("text", "json"):
        print("torchsync-lint: error: --statistics prints a table (--format text) or JSON (--format json)", file=sys.stderr)
        return 2
    args.fix = args.fix or args.fix_only  # as ruff: --fix-only implies --fix
    modes = [flag for flag, on in (("--fix", args.fix), ("--diff", args.diff), ("--add-noqa", args.add_noqa), ("--show-suggestions", args.show_suggestions)) if on]
    if len(modes) > 1 and modes != ["--fix", "--diff"]:
        print(f"torchsync-lint: error: {' and '.join(modes)} cannot be combined", file=sys.stderr)
        return 2
    if args.add_noqa:
        from torchsync_lint.add_noqa import run_add_noqa

        return run_add_noqa(args, config, paths)
    if args.fix or args.diff:
        try:
            from torchsync_lint.fixer import run_fix_command
        except ImportError:
            print("torchsync-lint: error: --fix/--diff are not available in this build", file=sys.stderr)
            return 2
        return run_fix_command(args, config, paths)
    if paths == ["-"]:
        results = [lint_file("-", config, stdin_filename=args.stdin_filename, use_cache=not args.no_cache)]
    else:
        from torchsync_lint.progress import progress

        with progress(sys.stderr) as tick:  # a line on a terminal's stderr only (progress.py)
            results = lint_paths(paths, config, jobs=args.jobs, use_cache=not args.no_cache, progress=tick)
    options = {
        "color": _use_color(args.output_file),
        "quiet": args.quiet,
        "unsafe_fixes": config.unsafe_fixes,
    }
    if args.show_suggestions:
        from torchsync_lint import suggestions

        report = suggestions.render(results)
    elif args.statistics:  # as ruff: the table (or its JSON) instead of the findings
        from torchsync_lint.reporters.statistics import render_statistics

        report = render_statistics(results, args.format, options)
    else:
        report = formats[args.format](results, options)
    write_report(report, args.output_file)
    findings = sum(len(r.findings) for r in results)
    errors = sum(len(r.errors) for r in results)
    for r in results:
        for e in r.errors:
            if args.format not in ("text", "concise") or args.show_suggestions:  # these print them inline
                print(f"{e.location}: {e.code} {e.message}", file=sys.stderr)
    if args.exit_zero:
        return 0
    if findings and not args.show_suggestions:  # suggestions are advice: 0 unless a file failed
        return 1
    return 2 if errors else 0


def _silently(command, args) -> int:
    """`--silent`: ``command`` with nothing printed (a report to `--output-file` is still
    written); when it exits 2, what it wrote to stderr and the lines of the files that could
    not be linted (TSL90x) are shown, so a usage error or an unreadable file is not a bare
    exit code."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command(args)
    if code == 2:
        failed = [line for line in out.getvalue().splitlines() if re.search(r": TSL90\d ", line)]
        sys.stderr.write(err.getvalue() + "".join(line + "\n" for line in failed if line not in err.getvalue()))
    return code


def _use_color(output_file: str | None) -> bool:
    if output_file or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()


def _show(args, config, paths: list[str]) -> int:
    """`--show-files`: the files a run would lint; `--show-settings`: the settings in force for
    the first of them (ruff's flags of the same names)."""
    from torchsync_lint.files import discover
    from torchsync_lint.rule import load_rules

    files, bad = discover(paths, config) if paths != ["-"] else ([args.stdin_filename or "-"], [])
    for path, error in bad:
        print(f"{path}: {error.code} {error.message}", file=sys.stderr)
    if args.show_files:
        write_report("".join(f"{path}\n" for path in sorted(files)), args.output_file)
        return 0
    if not files:
        print("torchsync-lint: error: no files found to show the settings for", file=sys.stderr)
        return 2
    write_report(config.describe(load_rules(), files[0]), args.output_file)
    return 0


def cmd_rules(args) -> int:
    from torchsync_lint.docs import fix_availability, readme_table, rule_info
    from torchsync_lint.rule import load_rules

    rules = load_rules()
    if args.format == "json":
        print(json.dumps([rule_info(r) for r in rules.values()], indent=2))
        return 0
    if args.format == "markdown":
        print(readme_table(rules))
        return 0
    width = max([len(r.name) for r in rules.values()] + [4])
    fixes = {code: fix_availability(rule) for code, rule in rules.items()}
    fix_width = max([len(f) for f in fixes.values()] + [3])
    print(f"{'code':7} {'name':{width}} {'fix':{fix_width}} summary")
    for code, rule in rules.items():
        off = "" if rule.default_enabled else " (off by default)"
        print(f"{code:7} {rule.name:{width}} {fixes[code]:{fix_width}} {rule.summary()}{off}")
    print("\nfix: `safe` is applied by --fix, `unsafe` needs --unsafe-fixes; `torchsync-lint explain CODE` for details.")
    return 0


def cmd_explain(args) -> int:
    from torchsync_lint.rule import load_rules

    rules = load_rules()
    key = args.rule.strip()
    rule = rules.get(key.upper()) or next((r for r in rules.values() if r.name == key), None)
    if rule is None:
        print(f"torchsync-lint: error: no rule {key!r}; `torchsync-lint rules` lists them", file=sys.stderr)
        return 2
    from torchsync_lint.docs import explanation

    print(explanation(rule))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
