"""What the code proves about a value by what it does with it. Part of ValueAnalysis
(values.py), which provides ``_eval``, ``reaching_defs``, ``qualname``, ``index`` and
``uses_accelerator``.

- A tensor test that failed: in the `else` of `if isinstance(v, torch.Tensor):` (or
  `torch.is_tensor(v)`, or the body of `if not ...`), `v` is no tensor at all; nor is it in
  the branch where `isinstance(v, float)` (or another Python scalar type) holds.
- Backward: a value that `.backward()` runs on (directly, through `scaler.scale(x)`, or handed
  to `accelerator.backward`, `fabric.backward`, Lightning's `self.manual_backward`,
  `torch.autograd.backward`) is a tensor in the model's autograd graph. In a module whose tensors
  may be on an accelerator, a value of otherwise unknown place that is backpropagated is a device
  tensor, and so are the terms of a container it sums (`sum(losses.values())`). A value the
  analysis already places (a CPU model's output, a host number) keeps its place: evidence only
  turns unknown into known.
- Shapes (what a device value is: a container, a module), by use: analysis/shapes.py.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.index import Def, literal_element
from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.knowledge import registry
from torchsync_lint.pytree import evaluated_literal

_FRAME_TYPES = frozenset({cst.FunctionDef, cst.Lambda, cst.Module})
_TENSOR_TYPES = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.cuda.FloatTensor", "torch.nn.Parameter"})
_PYTHON_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "complex"})
# Library types no tensor is an instance of: `isinstance(v, np.ndarray)` holds only of host data.
_HOST_TYPE_NAMESPACES = ("numpy.", "pandas.", "PIL.")
# Methods of objects that backpropagate the value they are given (Lightning's LightningModule).
_BACKWARD_METHODS = frozenset({"manual_backward"})
# Reductions whose result is backpropagated into every term of the container they reduce.
_SUMMING = frozenset({"sum", "torch.sum", "torch.stack", "torch.cat", "torch.mean"})
# Tensor methods whose result is their receiver, reshaped, reduced or scaled by a number.
_SAME_TERM_METHODS = frozenset("div mean sum float double half view reshape squeeze unsqueeze contiguous clone".split())
# How many bindings back the graph is followed from the value backward runs on.
_GRAPH_HOPS = 4


def _graph_terms(value: cst.BaseExpression | None) -> list[cst.Name]:
    """The names a backpropagated expression is made of: `loss` itself, the terms of a sum
    (`(v_loss * self.coef + a_loss - ent * 0.01).backward()`), a factor scaled by something
    that is not a name (`v_loss * self.coef`, `0.5 * loss`), a numerator. Two names multiplied
    say nothing of which is the tensor."""
    kind = type(value)  # exact types (analysis/tree.exact_types): asked of every call
    if kind is cst.Name:
        return [value]
    if kind is cst.Call and type(value.func) is cst.Attribute:
        method = value.func.attr.value  # `loss.div(n)`, `loss.mean()`, `ce.add(kl)`: the tensor methods of arithmetic
        if method in _SAME_TERM_METHODS:
            return _graph_terms(value.func.value)
        if method in ("add", "sub") and len(value.args) == 1:
            return _graph_terms(value.func.value) + _graph_terms(value.args[0].value)
        if method == "mul" and len(value.args) == 1 and type(value.args[0].value) is not cst.Name:
            return _graph_terms(value.func.value)
        return []
    if kind is cst.UnaryOperation and type(value.operator) is cst.Minus:
        return _graph_terms(value.expression)
    if kind is cst.BinaryOperation:
        operator = type(value.operator)
        if operator is cst.Add or operator is cst.Subtract:
            return _graph_terms(value.left) + _graph_terms(value.right)
        if operator is cst.Divide:
            return _graph_terms(value.left)  # `(loss / accum_steps).backward()`: the numerator
        if operator is cst.Multiply:
            other = {id(value.left): value.right, id(value.right): value.left}
            return [t for side in (value.left, value.right) if type(other[id(side)]) is not cst.Name for t in _graph_terms(side)]
    return []


class Evidence:
    def _not_a_tensor_here(self, node: cst.Name, defs: list[Def]) -> bool:
        """Is ``node`` read where a tensor test on it failed: the `else` of `if isinstance(v,
        torch.Tensor):` / `torch.is_tensor(v)` (or the body of `if not ...`), with no binding of
        it in that branch before the read?"""
        if self._type_tests is None:  # the names any `if` of the module tests the type of (most: none)
            self._type_tests = {
                t.args[0].value.value
                for t in self.index.calls
                if t.args and type(t.args[0].value) is cst.Name and type(t.func) in (cst.Name, cst.Attribute) and (t.func.value if type(t.func) is cst.Name else t.func.attr.value) in ("isinstance", "is_tensor", "type")
            }
        if node.value not in self._type_tests:
            return False
        child: cst.CSTNode = node
        for anc in self.index.ancestors(node):
            if type(anc) in _FRAME_TYPES:
                return False
            if isinstance(anc, (cst.If, cst.IfExp)):
                tested = self._tensor_test(anc.test, node.value)
                if tested is not None:
                    in_else = child is anc.orelse
                    negative = in_else if tested else child is anc.body
                    # A binding in the other branch cannot reach here; one in this branch can.
                    if negative and not any(d.stmt is child or self.index.inside(d.stmt, child) for d in defs):
                        return True
            child = anc
        return False

    def converted_before(self, node: cst.Name, d: Def) -> bool:
        """Does ``d`` reach ``node`` only past an `if` that converted the tensor it may hold:
        `if torch.is_tensor(x): x = x.cpu().numpy()`, `if type(x).__name__ != 'ndarray': x =
        x.cpu().numpy()`, then a read of x? A binding made before that `if` is read here only
        when its test failed: x held no tensor."""
        if self._type_tests is None:
            self._not_a_tensor_here(node, [])  # (fills the names tested)
        if node.value not in self._type_tests:
            return False
        child: cst.CSTNode = node
        for anc in self.index.ancestors(node):
            if type(anc) in (cst.IndentedBlock, cst.Module):
                for stmt in reversed(anc.body[: next((i for i, s in enumerate(anc.body) if s is child), 0)]):
                    if d.stmt is stmt or self.index.inside(d.stmt, stmt):
                        return False  # bound after any such `if`
                    if isinstance(stmt, cst.If) and stmt.orelse is None and self._tensor_test(stmt.test, node.value) is True and _rebinds(stmt.body, node.value):
                        return True
            if type(anc) in _FRAME_TYPES:
                return False
            child = anc
        return False

    def _tensor_test(self, test: cst.BaseExpression, name: str) -> bool | None:
        """True for `isinstance(name, torch.Tensor)` / `torch.is_tensor(name)`, False for their
        negation and for `isinstance(name, float)` (a Python scalar), None for any other test."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._tensor_test(test.expression, name)
            return None if inner is None else not inner
        named = _type_name_test(test, name)
        if named is not None:
            return named
        exact = self._exact_type_test(test, name)
        if exact is not None:
            return exact
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
            # `type(v) == float or type(v) == int`: a Python scalar wherever either holds
            sides = [self._tensor_test(test.left, name), self._tensor_test(test.right, name)]
            return False if sides == [False, False] else None
        if not isinstance(test, cst.Call) or not test.args or not isinstance(test.args[0].value, cst.Name) or test.args[0].value.value != name:
            return None
        func = test.func
        if (self.qualname(func) or "") == "torch.is_tensor":
            return True
        if isinstance(func, cst.Name) and func.value == "isinstance" and len(test.args) == 2:
            types = test.args[1].value
            options = [el.value for el in types.elements] if isinstance(types, cst.Tuple) else [types]
            if options and all((self.qualname(t) or "") in _TENSOR_TYPES for t in options):
                return True
            if options and all(self._host_type(t) for t in options):
                return False  # `isinstance(v, float)`, `isinstance(v, np.ndarray)` holds: no tensor in that branch
        return None

    def _exact_type_test(self, test: cst.BaseExpression, name: str) -> bool | None:
        """`type(name) == float` / `type(name) is int` (False: a Python scalar where it holds),
        `!=` / `is not` (True: where it fails), None for any other test."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return None
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        left = test.left
        if not (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "type" and not self.index.binds_locally("type", left.func)):
            return None
        if len(left.args) != 1 or not isinstance(left.args[0].value, cst.Name) or left.args[0].value.value != name or not self._host_type(right):
            return None
        if isinstance(operator, (cst.Equal, cst.Is)):
            return False
        return True if isinstance(operator, (cst.NotEqual, cst.IsNot)) else None

    def _host_type(self, t: cst.BaseExpression) -> bool:
        """A Python scalar type (not rebound here) or a numpy / pandas / PIL class."""
        if isinstance(t, cst.Name) and t.value in _PYTHON_TYPES and not self.index.binds_locally(t.value, t):
            return True
        return (self.qualname(t) or "").startswith(_HOST_TYPE_NAMESPACES)

    # -- backward ---------------------------------------------------------------------------
    def backpropagated(self, d: Def) -> str | None:
        """"value" when ``d``'s value is backpropagated, "terms" when a container it binds is
        summed into a backpropagated value, else None."""
        # (found with the project's answers, such as an accelerator's `backward`)
        return self._reused(self._module_facts, "graph", self._find_graph_defs).get(id(d))

    def _find_graph_defs(self) -> dict[int, str]:
        """Every binding whose value is in a backpropagated graph: the names backward runs on,
        the terms summed into each of their bindings (`loss = loss_real + loss_fake`), and what
        a function of this module returns there (`d_loss, parts = compute_d_loss(...)`:
        compute_d_loss's first returned element, and its terms), at most _GRAPH_HOPS bindings
        away."""
        found: dict[int, str] = {}
        work = [(value, 0) for call in self.index.calls for value in _graph_terms(self._backpropagated_value(call))]
        while work:
            value, hops = work.pop()
            for d in self.reaching_defs(value):
                if found.get(id(d)) == "value":
                    continue
                found[id(d)] = "value"
                self._mark_terms(d, found)
                if hops < _GRAPH_HOPS:
                    work += [(term, hops + 1) for term in self._graph_sources(d)]
        return found

    def _graph_sources(self, d: Def) -> list[cst.Name]:
        """The names a binding in the graph is made of: the terms of its value, or of what the
        function of this module it calls returns (the element it unpacks)."""
        if d.how not in ("assign", "unpack") or d.value is None:
            return []
        if d.how == "assign":
            terms = _graph_terms(d.value)  # `loss = a + b`, `target = loss.div(n)`
            if terms or type(d.value) is not cst.Call:
                return terms
        if d.how == "unpack" and type(d.value) is not cst.Call:
            return _graph_terms(literal_element(d))  # `loss, aux = a + b, c`
        call = d.value
        func = self.index.resolve_function(call.func, call) if type(call) is cst.Call else None
        if func is None or self.index.class_of_method.get(func) is not None and type(call.func) is cst.Name:
            return []  # (a constructor's `__init__` returns no value)
        path = d.path if d.how == "unpack" else ()
        if len(path) > 1:
            return []
        terms = []
        for returned in self.index.returns.get(func, []):
            if path:
                if type(returned) is not cst.Tuple or path[0] >= len(returned.elements) or returned.elements[path[0]].value is None:
                    continue
                returned = returned.elements[path[0]].value
            terms += _graph_terms(returned)
        return terms

    def _backpropagated_value(self, call: cst.Call) -> cst.BaseExpression | None:
        func = call.func
        if (self.qualname(func) or "") == "torch.autograd.backward":
            return call.args[0].value if call.args else None
        if type(func) is not cst.Attribute:
            return None
        method = func.attr.value
        if method == "backward" and self.qualname(func) is None:
            origin = self.origin_qualname(func.value)
            if origin is not None and registry.is_step_method(origin, "backward"):
                return call.args[0].value if call.args and call.args[0].keyword is None else None  # `accelerator.backward(loss)`
            receiver = func.value
            if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale" and receiver.args:
                return receiver.args[0].value  # `scaler.scale(loss).backward()`
            if any(a.keyword is None for a in call.args):
                # `x.backward(grad)` of a tensor, or `helper.backward(loss)` of an object we
                # cannot name: which one is the loss is not known
                return None
            return receiver
        if method in _BACKWARD_METHODS and call.args:
            return call.args[0].value
        return None

    def _mark_terms(self, d: Def, found: dict[int, str]) -> None:
        """`loss = sum(losses.values())`: the values of `losses` are in the graph too."""
        value = d.value if d.how == "assign" else None
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("sum", "mean") and not value.args:
            value = value.func.value  # `torch.stack(terms).sum()`
        if not isinstance(value, cst.Call) or not value.args:
            return
        func = value.func
        name = self.qualname(func) or (func.value if isinstance(func, cst.Name) and not self.index.binds_locally(func.value, func) else "")
        if name not in _SUMMING:
            return
        container = value.args[0].value
        if isinstance(container, (cst.GeneratorExp, cst.ListComp)) and isinstance(container.elt, cst.Name) and container.for_in.inner_for_in is None:
            target = container.for_in.target  # `sum(loss for loss in losses.values())`
            if isinstance(target, cst.Name) and target.value == container.elt.value:
                container = container.for_in.iter
        if isinstance(container, cst.Call) and isinstance(container.func, cst.Attribute) and container.func.attr.value == "values" and not container.args:
            container = container.func.value
        if isinstance(container, cst.Name):
            for term in self.reaching_defs(container):
                found.setdefault(id(term), "terms")

    def with_evidence(self, d: Def, kind: Kind | None) -> Kind | None:
        """``kind`` of binding ``d``, turned from unknown into a device value when ``d`` is
        backpropagated (or holds the terms of what is) in a module that may use an
        accelerator; from a device value of unknown shape into a container of device tensors
        when the code uses it as one."""
        if kind is Kind.DEVICE:
            # (a moved object, MOVED, is already "a tensor or a module, told by its use")
            use = self.container_use(d)
            if use == "module":
                return Kind.MODEL  # a module on the device (or an object holding its state)
            if use is not None:
                return Kind.CONTAINER
        if kind not in (None, Kind.UNKNOWN) or not self.uses_accelerator:
            return kind
        return Kind.DEVICE if self.backpropagated(d) is not None else kind


def _type_name_test(test: cst.BaseExpression, name: str) -> bool | None:
    """`type(name).__name__ == 'ndarray'` (False: no tensor where it holds), `!= 'ndarray'`
    (True: where it fails, none), None for any other test."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, (cst.Equal, cst.NotEqual))):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.SimpleString):
        left, right = right, left
    if not (isinstance(left, cst.Attribute) and left.attr.value == "__name__" and isinstance(left.value, cst.Call) and isinstance(left.value.func, cst.Name) and left.value.func.value == "type"):
        return None
    call = left.value
    if len(call.args) != 1 or not isinstance(call.args[0].value, cst.Name) or call.args[0].value.value != name or not isinstance(right, cst.SimpleString):
        return None
    if evaluated_literal(right) not in ("ndarray", "float", "int", "list", "tuple", "str", "bool"):
        return None
    return isinstance(test.comparisons[0].operator, cst.NotEqual)


def _rebinds(body: cst.BaseSuite, name: str) -> bool:
    """Does ``body`` assign ``name`` at its own level (so on every path through it)?"""
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for line in lines:
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else getattr(line, "body", ()) if isinstance(line, cst.SimpleStatementSuite) else ():
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
                return True
    return False
