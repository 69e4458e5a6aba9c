"""Cycles in the value analysis (analysis/values.py ``_solve``): a node computed on top of an
unfinished cycle head is reused wherever the unfinished nodes give it the same values, so a
forward that chains many blocks (each block's output is the next block's input, the shape of
ENet) costs time linear in the chain, not quadratic, and the answers do not change."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import ModuleAnalysis
from torchsync_lint.analysis import values as values_module


def chain_module(n: int) -> str:
    """An encoder of ``n`` blocks whose forward feeds each block's output to the next, some
    blocks handing back pooling indices that later blocks take by keyword (the shape of ENet)."""
    lines = [
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "",
        "",
        "class Block(nn.Module):",
        "    def __init__(self, c, down=False, up=False):",
        "        super().__init__()",
        "        self.down, self.up = down, up",
        "        self.pool = nn.MaxPool2d(2, return_indices=True)",
        "        self.unpool = nn.MaxUnpool2d(2)",
        "        self.conv = nn.Conv2d(c, c, 1)",
        "",
        "    def forward(self, x, indices=None, output_size=None):",
        "        identity = x",
        "        if self.down:",
        "            identity, idx = self.pool(identity)",
        "        elif self.up:",
        "            if identity.size() != indices.size():",
        "                indices = F.pad(indices, (0, 1))",
        "            identity = self.unpool(identity, indices=indices, output_size=output_size)",
        "        x = self.conv(x)",
        "        if identity.size() != x.size():",
        "            x = F.pad(x, (0, 1))",
        "        x += identity",
        "        if self.down:",
        "            return x, idx",
        "        return x",
        "",
        "",
        "class Net(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
    ]
    lines += [f"        self.b{i} = Block(8, down={i % 10 == 0}, up={i % 10 == 9})" for i in range(n)]
    lines += ["", "    def forward(self, x):"]
    for i in range(n):
        if i % 10 == 0:
            lines += [f"        size{i} = x.size()", f"        x, idx{i} = self.b{i}(x)"]
        elif i % 10 == 9:
            lines.append(f"        x = self.b{i}(x, indices=idx{i - 9}, output_size=size{i - 9})")
        else:
            lines.append(f"        x = self.b{i}(x)")
    lines.append("        return x")
    return "\n".join(lines) + "\n"


def _conditions(n: int, monkeypatch) -> tuple[list[str], int]:
    """The kinds of the block's `if` conditions, and how many evaluations answering them took."""
    solved = [0]
    real = values_module.ValueAnalysis._solve

    def counting(self, key, compute):
        solved[0] += 1
        return real(self, key, compute)

    monkeypatch.setattr(values_module.ValueAnalysis, "_solve", counting)
    source = chain_module(n)
    analysis = ModuleAnalysis(cst.parse_module(source), source)
    tests: list[cst.BaseExpression] = []

    class Ifs(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            tests.append(node.test)

    analysis.module.visit(Ifs())
    return [analysis.values.kind(t).value for t in tests], solved[0]


def test_a_chain_of_blocks_costs_linear_evaluations_and_keeps_its_answers(monkeypatch):
    kinds_20, solved_20 = _conditions(20, monkeypatch)
    kinds_40, solved_40 = _conditions(40, monkeypatch)
    # `self.down`/`self.up` are flags; the size comparisons read parameters no call decides
    assert kinds_20 == kinds_40 == ["host", "host", "unknown", "unknown", "host"]
    # Per path, the same nodes were recomputed: 11955 and 52963 evaluations (x4.4 for twice the
    # chain). Reused by the values they leaned on: about 1000 and 1900.
    assert solved_40 < 2.5 * solved_20 and solved_40 < 5000


def test_every_answer_is_the_same_whichever_order_the_questions_come_in():
    """Reuse depends on the path a question takes into the cycle; the answers must not."""
    source = chain_module(20)

    def kinds(order) -> dict:
        analysis = ModuleAnalysis(cst.parse_module(source), source)
        found: list[cst.BaseExpression] = []

        class Expressions(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                if isinstance(node, (cst.Name, cst.Call, cst.Attribute, cst.Comparison, cst.Tuple)):
                    found.append(node)
                return True

        analysis.module.visit(Expressions())
        positions = {id(node): n for n, node in enumerate(found)}
        return {positions[id(node)]: analysis.values.kind(node) for node in order(found)}

    forward = kinds(lambda nodes: nodes)
    assert forward == kinds(lambda nodes: list(reversed(nodes)))
    assert forward == kinds(lambda nodes: nodes[len(nodes) // 2 :] + nodes[: len(nodes) // 2])
