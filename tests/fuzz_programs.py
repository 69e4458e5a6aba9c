"""Generated programs for the fuzz test (tests/test_fuzz.py) and scripts/fuzz_fix.py.

Random grammar programs alone rarely reach the rules, so the programs here are seeded,
deterministic mutations of code that does: the fixtures, tests/data/hazards.py and every rule's
embedded VALID/INVALID case. A mutation edits the libcst tree (so the result always parses)
and is kept only when the result compiles:

- swap two neighbouring statements of a block, duplicate or delete one;
- wrap a statement in `if`/`for`/`while`/`with`/`try`/a function that is then called, or in
  several of those (deep nesting);
- rename every use of a name (also to names that mean something: `torch`, `os`, `float`);
- change a call's arguments (`non_blocking=False`, `num_workers=0`, `device="cpu"`,
  `generator=g`, `**kw`, drop one);
- insert a hazard (`loss.item()`, `torch.randn(3).to(x)`...) or a statement spliced from
  another program;
- inline a same-module helper at its call statement;
- chain an expression (`x + x + ...`) a few dozen terms long.

``check_program`` is the oracle: linting with every rule raises nothing and reports no rule
crash (TSL903) nor a parse failure (TSL900) of code that compiles; `--fix --unsafe-fixes`
(the fixer's pure core) raises nothing, converges, leaves code that compiles, and a second
run changes nothing.
"""

from __future__ import annotations

import glob
import os
import random
import warnings
import zlib
from collections.abc import Callable

import libcst as cst

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Names a rename may pick: ordinary ones, and ones the analysis or the fixes give meaning to.
_RENAMES = ["x", "y", "batch", "loss", "device", "model", "loader", "data", "torch", "os", "float", "int", "g", "np", "self", "metric", "total", "step", "_v"]
_CONDITIONS = ["step % 10 == 0", "flag", "torch.cuda.is_available()", "loss > 0", "i == 0", "True"]
_KEYWORDS = [
    ("non_blocking", ["False", "True", "nb"]),
    ("num_workers", ["0", "2", "args.workers"]),
    ("pin_memory", ["False", "True"]),
    ("device", ['"cpu"', '"cuda"', "device", "x"]),
    ("dtype", ["torch.float16", "torch.long"]),
    ("generator", ["g", "None"]),
    ("requires_grad", ["True"]),
    ("nan_strategy", ['"warn"', '"disable"']),
    ("weight", ["w", "1.0"]),
    ("collate_fn", ["pad", "None"]),
    ("out", ["buf"]),
]
_HAZARDS = [
    "v = loss.item()",
    "total += loss.item()",
    "print(loss)",
    "if torch.isnan(loss).any():\n    pass",
    "torch.cuda.synchronize()",
    "x = x.to(device)",
    "y = y.cuda()",
    "mask = x[x > 0]",
    "noise = torch.randn(3).to(x)",
    "noise = torch.randn(3, generator=g).to(device)",
    "t = torch.tensor(0.5, device=device)",
    "z = torch.zeros(4).to(device)",
    "r = torch.arange(0, 1, 0.1).cuda()",
    "loader = DataLoader(ds, batch_size=4)",
    "metric.update(loss)",
    "metric.update(0.5)",
    "acc = float((logits.argmax(1) == y).float().mean())",
    "for b in loader:\n    b = b.to(device)\n    loss = model(b).sum()\n    loss.backward()",
    "staging.copy_(x)",
    "x.mul_(2)",
]


# -- seeds ------------------------------------------------------------------------------------------
def seed_programs() -> list[tuple[str, str]]:
    """(name, source) of every seed, in a fixed order."""
    seeds: list[tuple[str, str]] = []
    paths = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))
    paths.append(os.path.join(ROOT, "tests", "data", "hazards.py"))
    for path in paths:
        if path.endswith(".fixed.py"):
            continue
        with open(path, encoding="utf-8") as fh:
            seeds.append((os.path.relpath(path, ROOT), fh.read()))
    from torchsync_lint.rule import load_rules

    for code, rule in load_rules().items():
        for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID)):
            for i, case in enumerate(cases):
                seeds.append((f"{code}-{kind}-{i}", case.code))
    return seeds


# -- mutations ----------------------------------------------------------------------------------------
def _compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<fuzz>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _stmt(code: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(code).body)


def _expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


class _Blocks(cst.CSTVisitor):
    """Every statement list that can be edited: the module body and indented blocks."""

    def __init__(self) -> None:
        self.blocks: list[cst.CSTNode] = []
        self.calls: list[cst.Call] = []
        self.names: list[str] = []
        self.functions: dict[str, cst.FunctionDef] = {}

    def visit_Module(self, node: cst.Module) -> None:
        self.blocks.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.setdefault(node.name.value, node)


class _Replace(cst.CSTTransformer):
    """Replace one node (by identity) with another."""

    def __init__(self, old: cst.CSTNode, new: cst.CSTNode) -> None:
        self.old, self.new = old, new

    def on_leave(self, original_node, updated_node):
        return self.new if original_node is self.old else updated_node


class _Rename(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if original_node.value == self.old else updated_node


def _with_body(block: cst.CSTNode, body: list[cst.BaseStatement]) -> cst.CSTNode:
    if not body:
        body = _stmt("pass\n")
    return block.with_changes(body=body)


def _wrap(stmt: cst.BaseStatement, rng: random.Random) -> list[cst.BaseStatement]:
    inner = cst.IndentedBlock(body=[stmt])
    choice = rng.randrange(7)
    if choice == 0:
        return [cst.If(test=_expr(rng.choice(_CONDITIONS)), body=inner)]
    if choice == 1:
        return [cst.For(target=cst.Name(rng.choice(["_k", "i", "step"])), iter=_expr(rng.choice(["range(2)", "loader", "batches"])), body=inner)]
    if choice == 2:
        return [cst.While(test=_expr(rng.choice(["running", "step < 10"])), body=inner)]
    if choice == 3:
        return [cst.With(items=[cst.WithItem(_expr(rng.choice(["torch.no_grad()", "torch.autocast('cuda')", "ctx"])))], body=inner)]
    if choice == 4:
        handler = cst.ExceptHandler(body=cst.IndentedBlock(body=_stmt("pass\n")), type=cst.Name("Exception"))
        return [cst.Try(body=inner, handlers=[handler])]
    if choice == 5:
        return [cst.If(test=_expr(rng.choice(_CONDITIONS)), body=cst.IndentedBlock(body=_stmt("pass\n")), orelse=cst.Else(body=inner))]
    name = rng.choice(["_outlined", "step_fn", "train_step"])
    func = cst.FunctionDef(name=cst.Name(name), params=cst.Parameters(), body=inner)
    return [func, *_stmt(f"{name}()\n")]


def _mutate_block(module: cst.Module, rng: random.Random, op: str, others: list[str]) -> cst.Module:
    finder = _Blocks()
    module.visit(finder)
    block = rng.choice(finder.blocks)
    body = list(block.body)
    if not body:
        return module
    i = rng.randrange(len(body))
    if op == "swap" and len(body) > 1:
        i = min(i, len(body) - 2)
        body[i], body[i + 1] = body[i + 1], body[i]
    elif op == "duplicate":
        body.insert(i, body[i])
    elif op == "delete":
        del body[i]
    elif op == "wrap":
        body[i : i + 1] = _wrap(body[i], rng)
    elif op == "nest":
        stmts = [body[i]]
        for _ in range(rng.randint(2, 12)):
            stmts = _wrap(stmts[0], rng) if len(stmts) == 1 else stmts
        body[i : i + 1] = stmts
    elif op == "hazard":
        body.insert(i, _stmt(rng.choice(_HAZARDS) + "\n")[0])
    elif op == "splice":
        donor = cst.parse_module(rng.choice(others))
        if donor.body:
            body.insert(i, rng.choice(list(donor.body)))
    return module.deep_replace(block, _with_body(block, body))  # type: ignore[return-value]


def _mutate_call(module: cst.Module, rng: random.Random) -> cst.Module:
    finder = _Blocks()
    module.visit(finder)
    if not finder.calls:
        return module
    call = rng.choice(finder.calls)
    args = list(call.args)
    choice = rng.randrange(5)
    if choice == 0 and args:
        del args[rng.randrange(len(args))]
    elif choice == 1:
        args.append(cst.Arg(_expr(rng.choice(["kw", "loader_kwargs"])), star="**"))
    else:
        key, values = rng.choice(_KEYWORDS)
        value = _expr(rng.choice(values))
        for j, a in enumerate(args):
            if a.keyword is not None and a.keyword.value == key:
                args[j] = a.with_changes(value=value)
                break
        else:
            args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
            args.append(cst.Arg(value, keyword=cst.Name(key)))
    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
    return module.deep_replace(call, call.with_changes(args=args))  # type: ignore[return-value]


def _inline(module: cst.Module, rng: random.Random) -> cst.Module:
    """`f(a, b)` / `v = f(a, b)` as a statement -> `p = a; q = b; <body of f>` (last `return e` -> `v = e`)."""
    finder = _Blocks()
    module.visit(finder)
    candidates = []
    for block in finder.blocks:
        for j, stmt in enumerate(block.body):
            if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
                continue
            small = stmt.body[0]
            call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in finder.functions:
                candidates.append((block, j, small, call))
    if not candidates:
        return module
    block, j, small, call = rng.choice(candidates)
    func = finder.functions[call.func.value]
    params = [*func.params.posonly_params, *func.params.params]
    if func.params.star_arg is not cst.MaybeSentinel.DEFAULT or func.params.star_kwarg is not None or not isinstance(func.body, cst.IndentedBlock):
        return module
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if len(positional) > len(params) or any(a.star for a in call.args):
        return module
    assigns = []
    for p, a in zip(params, positional):
        assigns += _stmt(f"{p.name.value} = {module.code_for_node(a.value)}\n")
    for a in call.args:
        if a.keyword is not None:
            assigns += _stmt(f"{a.keyword.value} = {module.code_for_node(a.value)}\n")
    body = list(func.body.body)
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return):
        value = last.body[0].value
        tail = module.code_for_node(value) if value is not None else "None"
        if isinstance(small, cst.Assign):
            body[-1] = _stmt(f"{module.code_for_node(small.targets[0].target)} = {tail}\n")[0]
        else:
            body[-1] = _stmt(f"{tail}\n")[0]
    new_body = list(block.body)
    new_body[j : j + 1] = assigns + body
    return module.deep_replace(block, _with_body(block, new_body))  # type: ignore[return-value]


def _rename(module: cst.Module, rng: random.Random) -> cst.Module:
    finder = _Blocks()
    module.visit(finder)
    names = sorted(set(finder.names))
    if not names:
        return module
    return module.visit(_Rename(rng.choice(names), rng.choice(_RENAMES)))


def _chain(module: cst.Module, rng: random.Random) -> cst.Module:
    """A statement `c = n + n + ...` (or `and`, or `.a.a`) a few dozen terms long, inside a block."""
    finder = _Blocks()
    module.visit(finder)
    block = rng.choice(finder.blocks)
    term = rng.choice(["loss", "x", "1"])
    op = rng.choice([" + ", " and ", " * "])
    n = rng.randint(10, 60)
    stmt = _stmt(f"_chain = {op.join([term] * n)}\n")[0]
    body = list(block.body)
    body.insert(rng.randrange(len(body) + 1), stmt)
    return module.deep_replace(block, _with_body(block, body))  # type: ignore[return-value]


_OPS: list[tuple[str, Callable]] = [
    ("swap", lambda m, r, o: _mutate_block(m, r, "swap", o)),
    ("duplicate", lambda m, r, o: _mutate_block(m, r, "duplicate", o)),
    ("delete", lambda m, r, o: _mutate_block(m, r, "delete", o)),
    ("wrap", lambda m, r, o: _mutate_block(m, r, "wrap", o)),
    ("nest", lambda m, r, o: _mutate_block(m, r, "nest", o)),
    ("hazard", lambda m, r, o: _mutate_block(m, r, "hazard", o)),
    ("hazard", lambda m, r, o: _mutate_block(m, r, "hazard", o)),
    ("splice", lambda m, r, o: _mutate_block(m, r, "splice", o)),
    ("call", lambda m, r, o: _mutate_call(m, r)),
    ("call", lambda m, r, o: _mutate_call(m, r)),
    ("rename", lambda m, r, o: _rename(m, r)),
    ("inline", lambda m, r, o: _inline(m, r)),
    ("chain", lambda m, r, o: _chain(m, r)),
]


def mutate(source: str, rng: random.Random, others: list[str], steps: int) -> tuple[str, list[str]]:
    """``source`` after ``steps`` mutations that keep it compiling, and their names."""
    module = cst.parse_module(source)
    applied: list[str] = []
    for _ in range(steps):
        for _attempt in range(4):
            name, op = rng.choice(_OPS)
            try:
                candidate = op(module, rng, others)
                code = candidate.code
            except Exception:  # noqa: BLE001 - a mutation that libcst cannot render: try another
                continue
            if _compiles(code):
                module = candidate
                applied.append(name)
                break
    return module.code, applied


def splice(source: str, snippet: str, rng: random.Random) -> str:
    """``source`` with every statement of ``snippet`` (say, hypothesmith's) inserted in one of
    its blocks; ``source`` itself when that does not compile or parse."""
    try:
        module, donor = cst.parse_module(source), cst.parse_module(snippet)
    except Exception:  # noqa: BLE001 - grammar code libcst cannot parse: nothing to splice
        return source
    finder = _Blocks()
    module.visit(finder)
    block = rng.choice(finder.blocks)
    body = list(block.body)
    at = rng.randrange(len(body) + 1)
    body[at:at] = list(donor.body)
    try:
        code = module.deep_replace(block, _with_body(block, body)).code  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001
        return source
    return code if _compiles(code) else source


def generate(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` programs: seed programs in turn, each mutated 1-6 times; deterministic."""
    rng = random.Random(seed)
    seeds = seed_programs()
    sources = [s for _, s in seeds]
    out = []
    for k in range(count):
        name, source = seeds[rng.randrange(len(seeds))]
        code, applied = mutate(source, rng, sources, rng.randint(1, 6))
        out.append((f"p{seed}_{k:05d}_{name.replace('/', '_').replace('.py', '')}_{'+'.join(applied)}", code))
    return out


def grammar_programs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` programs: code from hypothesmith's Python grammar strategy spliced into a seed
    program, then mutated 0-3 times. Deterministic (hypothesis runs derandomized)."""
    import hypothesmith
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seeds = seed_programs()
    sources = [s for _, s in seeds]
    out: list[tuple[str, str]] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_grammar(), st.integers(0, 2**32 - 1))
    def collect(snippet: str, r: int) -> None:
        rng = random.Random(seed * 7919 + r)
        name, source = seeds[rng.randrange(len(seeds))]
        code, applied = mutate(splice(source, snippet, rng), rng, sources, rng.randint(0, 3))
        out.append((f"h{seed}_{len(out):05d}_{name.replace('/', '_').replace('.py', '')}_{'+'.join(applied)}", code))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grammar code full of `1()`: SyntaxWarnings by the hundred
        collect()
    return out[:count]


# -- the oracle ---------------------------------------------------------------------------------------
def check_program(source: str, path: str = "fuzz.py") -> list[str]:
    """Every contract violation for one program, as `kind: detail` strings (empty: fine)."""
    from torchsync_lint.engine import lint_source
    from torchsync_lint.fixer import fix_source
    from torchsync_lint.rule import load_rules

    codes = set(load_rules())
    # Half the programs target a torchmetrics older than 1.6.2, so that TSL203 (and its fix) runs.
    settings = {"torchmetrics-version": "1.6.1"} if zlib.crc32(path.encode()) % 2 else {}

    def lint(text: str):
        return lint_source(text, path, codes, settings)

    problems: list[str] = []
    compiles = _compiles(source)
    try:
        findings = lint(source)
    except Exception as exc:  # noqa: BLE001 - the point: nothing may escape
        return [f"check raised: {type(exc).__name__}: {str(exc)[:200]}"]
    for f in findings:
        if f.code == "TSL903":
            problems.append(f"rule crash: {f.message[:300]}")
        elif f.code == "TSL900" and compiles:
            problems.append(f"TSL900 on code that compiles: {f.message[:200]}")
    try:
        result = fix_source(source, path, unsafe=True, lint=lint, initial=findings)
    except Exception as exc:  # noqa: BLE001
        return [*problems, f"fix raised: {type(exc).__name__}: {str(exc)[:200]}"]
    fixed = result.new_source
    if not result.converged:
        problems.append("fix did not converge")
    for finding, why in result.refused:
        problems.append(f"fix refused ({finding.code} line {finding.line}): {why[:200]}")
    if fixed != source:
        if compiles and not _compiles(fixed):
            problems.append("fixed file does not compile")
        try:
            again = fix_source(fixed, path, unsafe=True, lint=lint)
        except Exception as exc:  # noqa: BLE001
            return [*problems, f"second fix raised: {type(exc).__name__}: {str(exc)[:200]}"]
        if again.new_source != fixed or again.applied:
            problems.append(f"second fix changed the file ({sorted({f.code for f in again.applied})})")
    return problems
