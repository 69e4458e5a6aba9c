"""The pure lint engine: source text in, findings out. No I/O, no printing, no global state."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from torchsync_lint import suppress
from torchsync_lint.analysis import ModuleAnalysis
from torchsync_lint.errors import file_error
from torchsync_lint.rule import RuleContext, load_rules
from torchsync_lint.types import Finding

# Files without any of these words cannot hold a finding; skipping them keeps pre-commit fast.
_TRIGGERS = ("torch", "lightning", "Lightning", "cuda", "backward", "DataLoader", "metric", "device")


def lint_source(source: str, path: str = "<string>", codes: set[str] | None = None, settings: dict | None = None, *, noqa: bool = True) -> list[Finding]:
    """Lint one module. ``codes`` limits the rules (None: every default rule).

    ``noqa=False`` leaves `# noqa` comments to the caller (flake8 applies them itself);
    `# torchsync: ignore[...]` always applies.
    """
    rules = load_rules()
    if codes is None:
        codes = {code for code, rule in rules.items() if rule.default_enabled}
    active = [rules[c] for c in sorted(codes) if c in rules]
    if not active or not any(word in source for word in _TRIGGERS):
        return []
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return [file_error(path, "TSL900", f"cannot parse: {exc.message}", exc.raw_line, exc.raw_column + 1)]
    except (RecursionError, MemoryError) as exc:  # pathological nesting
        return [file_error(path, "TSL900", f"cannot parse: {type(exc).__name__}")]
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    analysis = ModuleAnalysis(module, source, positions)
    parents = analysis.index.parents
    context = RuleContext(path, module, analysis, settings or {})

    reported: list[tuple[cst.CSTNode, Finding]] = []
    errors: list[Finding] = []
    visitors = [rule(context) for rule in active]
    try:
        cst.visit_batched(module, visitors)
        for v in visitors:
            reported += v.reported
    except Exception:  # noqa: BLE001 - isolate the crashing rule, keep the others' findings
        for rule in active:
            visitor = rule(context)
            try:
                cst.visit_batched(module, [visitor])
            except Exception as exc:  # noqa: BLE001
                errors.append(file_error(path, "TSL903", f"rule {rule.code} crashed: {type(exc).__name__}: {exc}"))
                continue
            reported += visitor.reported

    suppressed = suppress.comment_codes(source, noqa=noqa)
    findings = {}
    for node, finding in reported:
        lines = suppress.statement_lines(node, parents, positions)
        if any(suppress.matches(finding.code, suppressed.get(line, set())) for line in lines):
            continue
        findings.setdefault((finding.line, finding.column, finding.code), finding)
    return sorted([*findings.values(), *errors], key=lambda f: f.sort_key)

