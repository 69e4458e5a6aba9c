"""Rewrites: the training step moves onto an object, as trainer code is written.

- ``trainer_class``: a ``Trainer`` whose ``__init__`` stores what the step reads and the loop
  never rebinds (the model, optimizer, device, loader, args... whatever they are) on ``self``
  and whose ``train_step`` method is the loop body's run (extract.py); the loop iterates
  ``trainer.loader`` and calls ``trainer.train_step(x, y, ...)``.
- ``base_trainer``: a ``BaseTrainer`` that stores them and owns the loop (``fit``), and a
  subclass ``Trainer(BaseTrainer)`` with the step: the call ``self.train_step`` resolves
  through the subclass.
- ``lightning_module``: the loop body becomes ``training_step(self, batch, batch_idx)`` of a
  ``LightningModule`` (manual optimisation: the body still steps its optimizer) that
  ``lightning.Trainer(max_epochs=1).fit`` runs over the loop's iterable (not for a loop over
  ``range(n)``: no loader to hand Lightning). Loop-carried values
  live on the module (``self.running_loss``). Lint-only: Lightning's loop differs from the
  fixture's (it does not stop at ``--steps``), so its RESULT is not compared.

Expected for all three: the same findings, at the moved lines; but in ``training_step`` a
batch's ``.to(device)`` (TSL301) copies nothing (Lightning moved the batch already): gone.
"""

from __future__ import annotations

import libcst as cst

from .loops import analysis_of, attr_for, collect, fresh, rename_reads
from .rewritten import GONE, Replacer, Rewritten, Source, assign_to, defn, returning, statement


def _init(fields: list[str], extra: list[str] = (), suffix: str = "") -> cst.BaseStatement:
    params = ", ".join(["self"] + [attr_for(n) for n in fields])
    body = list(extra) + [statement(f"self.{attr_for(n, suffix)} = {attr_for(n)}") for n in fields] or [statement("pass")]
    return defn(f"def __init__({params}):", body, blank_lines=0)


def _method(header: str, body: list) -> cst.BaseStatement:
    return defn(header, body, blank_lines=1)


def _new_body(loop, start, stop, call) -> cst.IndentedBlock:
    body = list(loop.body.body)
    body[start:stop] = [call]
    return loop.body.with_changes(body=body)


def trainer_class(src: Source) -> Rewritten | None:
    analysis = analysis_of(src)
    replace, before = {}, {}
    for loop in analysis.step_loops():
        run = analysis.run(loop)
        if run is None:
            continue
        cls = fresh(analysis.module, "Trainer") if not before else f"Trainer{len(replace) + 1}"
        obj = fresh(analysis.module, "trainer")
        fields = sorted(set(run.invariants) | set(run.iter_invariants))
        step_args = [n for n in run.inputs if n not in run.invariants]
        steps = [rename_reads(s, run.invariants) for s in run.statements]
        method = _method(f"def train_step({', '.join(['self'] + step_args)}):", steps + returning(run.outputs))
        klass = defn(f"class {cls}:", [_init(fields), method])
        call = statement(assign_to(run.outputs, f"{obj}.train_step({', '.join(step_args)})"))
        new_loop = loop.with_changes(body=_new_body(loop, run.start, run.stop, call))
        if isinstance(loop, cst.For):
            new_loop = new_loop.with_changes(iter=rename_reads(loop.iter, run.iter_invariants, obj))
        else:
            new_loop = new_loop.with_changes(test=rename_reads(loop.test, run.iter_invariants, obj))
        make = statement(f"{obj} = {cls}({', '.join(fields)})")
        replace[id(loop)] = [make, new_loop]
        before.setdefault(id(run.top), []).append(klass)
    if not replace:
        return None
    return Rewritten({src.name: analysis.module.visit(Replacer(replace, before)).code})


def base_trainer(src: Source) -> Rewritten | None:
    analysis = analysis_of(src)
    replace, before = {}, {}
    for loop in analysis.step_loops():
        run = analysis.run(loop)
        if run is None or set(run.loop_outputs) & set(run.target_names):
            continue
        k = len(replace) + 1
        base, sub = (fresh(analysis.module, "BaseTrainer"), fresh(analysis.module, "Trainer")) if k == 1 else (f"BaseTrainer{k}", f"Trainer{k}")
        obj = fresh(analysis.module, "trainer")
        fields = sorted(set(run.loop_invariants))
        step_args = [n for n in run.inputs if n not in run.invariants]
        fit_args = [n for n in run.loop_inputs if n not in fields]
        call = statement(assign_to(run.outputs, f"self.train_step({', '.join(step_args)})"))
        inner = loop.with_changes(body=_new_body(loop, run.start, run.stop, call))
        inner = rename_reads(inner, fields)
        fit = _method(f"def fit({', '.join(['self'] + fit_args)}):", [inner] + returning(run.loop_outputs))
        abstract = _method("def train_step(self, *args):", [statement("raise NotImplementedError")])
        steps = [rename_reads(s, run.invariants) for s in run.statements]
        step = defn(f"def train_step({', '.join(['self'] + step_args)}):", steps + returning(run.outputs), blank_lines=0)
        before.setdefault(id(run.top), []).extend([defn(f"class {base}:", [_init(fields), fit, abstract]), defn(f"class {sub}({base}):", [step])])
        replace[id(loop)] = [statement(f"{obj} = {sub}({', '.join(fields)})"), statement(assign_to(run.loop_outputs, f"{obj}.fit({', '.join(fit_args)})"))]
    if not replace:
        return None
    return Rewritten({src.name: analysis.module.visit(Replacer(replace, before)).code})


class _LeaveStep(cst.CSTTransformer):
    """`break`/`continue` of the loop itself -> `return None` (the end of this step)."""

    def __init__(self):
        self.depth = 0

    def visit_For(self, node):
        self.depth += 1

    def leave_For(self, original, updated):
        self.depth -= 1
        return updated

    def visit_While(self, node):
        self.depth += 1

    def leave_While(self, original, updated):
        self.depth -= 1
        return updated

    def visit_FunctionDef(self, node):
        return False

    def leave_Break(self, original, updated):
        return cst.Return(value=cst.Name("None")) if self.depth == 0 else updated

    def leave_Continue(self, original, updated):
        return cst.Return(value=cst.Name("None")) if self.depth == 0 else updated


# Lightning copies each batch to the module's device before `training_step` (its
# `batch_to_device`): the step's own `.to(device)` then copies nothing
_MOVED_BY_LIGHTNING = {"TSL301"}
_SUFFIX = "_"  # `self.device_`: LightningModule has its own `device`, `trainer`, `logger`...


def lightning_module(src: Source) -> Rewritten | None:
    analysis = analysis_of(src)
    replace, before, expect = {}, {}, {}
    for loop in analysis.step_loops():
        if not isinstance(loop, cst.For) or loop.orelse is not None:
            continue
        run = analysis.run(loop, whole_body=True)
        if run is None or any(isinstance(n, (cst.Return, cst.Yield)) for n in collect(loop.body, into_scopes=False)):
            continue
        it, target = loop.iter, loop.target
        enumerated = isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" and len(it.args) == 1
        if enumerated:
            it = it.args[0].value
            if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                continue
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range":
            continue  # `for step in range(n)` makes its data in the loop: Lightning would feed it ints as batches
        k = len(replace) + 1
        cls = fresh(analysis.module, "LitStep") if k == 1 else f"LitStep{k}"
        obj = fresh(analysis.module, "lit_module")
        fields = sorted(set(run.loop_invariants) | set(run.loop_inputs))
        on_self = sorted((set(fields) | set(run.loop_outputs)) - set(run.target_names))
        code = cst.Module([]).code_for_node
        if enumerated:
            first, second = (code(e.value) for e in target.elements)
            unpack = statement(f"{first}, {second} = batch_idx, batch")
        else:
            unpack = statement(f"{code(target)} = batch")
        body = [rename_reads(s, on_self, suffix=_SUFFIX).visit(_LeaveStep()) for s in loop.body.body]
        init = _init(fields, [statement("super().__init__()"), statement("self.automatic_optimization = False")], _SUFFIX)
        step = _method("def training_step(self, batch, batch_idx):", [unpack] + body + [statement("return None")])
        optim = _method("def configure_optimizers(self):", [statement("return None")])
        before.setdefault(id(run.top), []).append(defn(f"class {cls}(lightning.LightningModule):", [init, step, optim]))
        trainer = "lightning.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)"
        stmts = [statement(f"{obj} = {cls}({', '.join(fields)})"), statement(f"{trainer}.fit({obj}, train_dataloaders={code(it)})")]
        stmts += [statement(f"{n} = {obj}.{attr_for(n, _SUFFIX)}") for n in run.loop_outputs if n not in run.target_names]
        replace[id(loop)] = stmts
        pos = analysis.positions[loop.body]
        expect.update({(line, code): GONE for line, code in src.markers if code in _MOVED_BY_LIGHTNING and pos.start.line <= line <= pos.end.line})
    if not replace:
        return None
    module = analysis.module.visit(Replacer(replace, before, after_imports=[statement("import lightning")]))
    return Rewritten({src.name: module.code}, expect)
