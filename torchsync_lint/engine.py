"""The pure lint engine: source text in, findings out. No I/O, no printing, no global state.

One file's failure never spreads: parsing, the analysis, each rule and each finding's position
run inside their own error boundary, so a pathological file (a 400-term expression, 1,000
`elif`s) costs at most its own TSL900/TSL903 and every other finding of the run stands.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint import suppress, unused_noqa
from torchsync_lint.analysis import ModuleAnalysis
from torchsync_lint.analysis.env import NULL_ENV, Env
from torchsync_lint.errors import describe_exception, file_error, syntax_error
from torchsync_lint.rule import PositionError, Rule, RuleContext, load_rules
from torchsync_lint.types import Finding

# Files without any of these words cannot hold a finding; skipping them keeps pre-commit fast.
_TRIGGERS = ("torch", "lightning", "Lightning", "cuda", "backward", "DataLoader", "metric", "device", "Trainer", "ignite")


def lint_source(
    source: str, path: str = "<string>", codes: set[str] | None = None, settings: dict | None = None, *,
    noqa: bool = True, env: Env | None = None, prepared: ModuleAnalysis | None = None,
) -> list[Finding]:
    """Lint one module. ``codes`` limits the rules (None: every default rule).

    ``noqa=False`` leaves `# noqa` comments to the caller (flake8 applies them itself);
    `# torchsync: ignore[...]` always applies. ``env`` is what the rest of the project says
    about the module (the project view); ``prepared`` an analysis of the same source already
    made (its parse and index are reused).
    """
    rules = load_rules()
    if codes is None:
        codes = {code for code, rule in rules.items() if rule.default_enabled}
    active = [rules[c] for c in sorted(codes) if c in rules]
    if not active or (env is None and not any(word in source for word in _TRIGGERS)):
        return []  # (a module of a project may receive device tensors without naming torch)
    env = env or NULL_ENV
    if prepared is not None and prepared.source == source:
        module = prepared.module
    else:
        prepared = None
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError as exc:
            return [syntax_error(path, source, exc)]
        except (RecursionError, MemoryError) as exc:  # pathological nesting
            return [file_error(path, "TSL900", f"cannot parse: {type(exc).__name__} (nested too deeply)")]
    try:
        analysis = prepared.with_env(env) if prepared is not None else ModuleAnalysis(module, source, env)
    except Exception as exc:  # noqa: BLE001 - a RecursionError on a pathological file, say
        return [file_error(path, "TSL903", f"the analysis failed on this file: {describe_exception(exc)}")]
    try:
        return _findings(active, analysis, path, source, settings, noqa)
    finally:
        analysis.release()  # (its cycles freed now: see ModuleAnalysis.release)


def _findings(active: list, analysis: ModuleAnalysis, path: str, source: str, settings: dict | None, noqa: bool) -> list[Finding]:
    context = RuleContext(path, analysis.module, analysis, settings or {})
    instances = [rule(context) for rule in active]
    errors = _run_rules(instances, analysis, path)
    reported = [pair for rule in instances if not rule.crashed for pair in rule.reported]
    judge_unused = any(rule.code == unused_noqa.CODE for rule in instances)
    if not reported and not judge_unused:
        return errors
    found = suppress.directives(source, noqa=noqa)
    exempt = suppress.file_codes(source, noqa=noqa)
    by_line: dict[int, list[suppress.Directive]] = {}
    for d in found:
        by_line.setdefault(d.line, []).append(d)
    used: set[tuple[suppress.Directive, str]] = set()  # (directive, entry) that silenced a finding
    findings: dict[tuple, Finding] = {}
    for node, finding in reported:
        if exempt and suppress.matches(finding.code, exempt):
            continue  # `# torchsync-lint: noqa: TSL101` (or a blanket one) exempts the file
        if by_line:
            try:
                lines = suppress.statement_lines(node, analysis.tree.parents, analysis.positions)
            except (RecursionError, MemoryError):
                lines = range(finding.line, finding.end_line + 1)
            hits = [(d, entry) for line in lines for d in by_line.get(line, ()) for entry in d.matching(finding.code)]
            if hits:
                used.update(hits)
                continue
        findings.setdefault((finding.line, finding.column, finding.code), finding)
    if judge_unused and found:
        # Judged only for rules that ran to the end and could report here (unused_noqa.py).
        ran = {rule.code for rule in instances if not rule.crashed and not rule.inert()}
        for f in unused_noqa.unused_findings(path, found, used, ran, load_rules(), exempt):
            findings.setdefault((f.line, f.column, f.code), f)
    return sorted([*findings.values(), *errors], key=lambda f: f.sort_key)


def _run_rules(rules: list[Rule], analysis: ModuleAnalysis, path: str) -> list[Finding]:
    """Call every rule's ``visit_<Type>`` methods on the walked nodes, in source order.

    A rule that raises is stopped and dropped for this file (one TSL903 naming it); the
    other rules go on. A finding whose position cannot be computed is one TSL903 too.
    """
    errors: list[Finding] = []
    handlers: dict[type, list[tuple[Rule, object]]] = {}
    for node in analysis.tree.nodes:
        node_type = type(node)
        calls = handlers.get(node_type)
        if calls is None:
            type_name = node_type.__name__
            calls = handlers[node_type] = [(r, getattr(r, r.visited_types()[type_name])) for r in rules if type_name in r.visited_types()]
        for rule, method in calls:
            if rule.crashed:
                continue
            try:
                method(node)
            except PositionError as exc:
                errors.append(file_error(path, "TSL903", f"{rule.code}: a finding's position could not be computed: {exc}"))
            except Exception as exc:  # noqa: BLE001 - isolate the crashing rule, keep the others' findings
                rule.crashed = True
                errors.append(file_error(path, "TSL903", f"rule {rule.code} crashed: {describe_exception(exc)}"))
    return errors
