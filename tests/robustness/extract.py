"""Rewrite: the body of each step loop becomes a module-level helper function.

    for step, (x, y) in enumerate(loader):          for step, (x, y) in enumerate(loader):
        if step >= args.steps:                          if step >= args.steps:
            break                                           break
        x = x.to(device)                    ->          running_loss = _loop_body(device, model, running_loss, x)
        loss = model(x).sum()
        running_loss += loss.item()               def _loop_body(device, model, running_loss, x):
                                                      x = x.to(device) ...
                                                      return running_loss

The statements that leave the loop (`break`, `continue`, `return`) stay in it; the longest run
of statements without them moves. The helper takes the locals the run reads that were bound
before it and returns the locals the rest of the function reads afterwards, so the program
computes the same values. Expected: the same findings, at the moved lines.
"""

from __future__ import annotations


from .loops import analysis_of
from .rewritten import Replacer, Rewritten, Source, assign_to, defn, returning, statement


def extract_loop_body(src: Source) -> Rewritten | None:
    analysis = analysis_of(src)
    replace, before, count = {}, {}, 0
    for loop in analysis.step_loops():
        run = analysis.run(loop)
        if run is None:
            continue
        count += 1
        name = f"_loop_body_{count}" if count > 1 else "_loop_body"
        helper = defn(f"def {name}({', '.join(run.inputs)}):", run.statements + returning(run.outputs))
        call = statement(assign_to(run.outputs, f"{name}({', '.join(run.inputs)})"))
        body = list(loop.body.body)
        body[run.start:run.stop] = [call]
        replace[id(loop)] = loop.with_changes(body=loop.body.with_changes(body=body))
        before.setdefault(id(run.top), []).append(helper)
    if not replace:
        return None
    module = analysis.module.visit(Replacer(replace, before))
    return Rewritten({src.name: module.code})
