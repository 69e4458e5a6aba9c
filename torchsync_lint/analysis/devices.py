"""Device arguments: does `.to(x)` / `device=x` name the CPU or an accelerator? And may this
module's tensors be on an accelerator at all? Part of ValueAnalysis (values.py)."""

from __future__ import annotations

import re

import libcst as cst

from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.analysis.loader_info import literal_value
from torchsync_lint.knowledge import torch as tk
from torchsync_lint.pytree import evaluated_literal

ACCELERATOR_WORDS = re.compile(r"cuda|mps|xla|xpu|hpu|npu|meta|gpu|accelerat", re.I)
CPU_WORDS = re.compile(r"^cpu(:\d+)?$")

# A module that never mentions an accelerator keeps every tensor on the CPU.
_ACCELERATOR_SOURCE = re.compile(r"cuda|device|accelerat|\bxla\b|\bmps\b|lightning|Lightning|Fabric|\.to\(")
# Words that name an accelerator (or a framework that picks one): a module that says one of
# them may run on it, whatever its `device` variables hold.
_ACCELERATOR_NAMES = re.compile(r"cuda|accelerat|\bxla\b|\bmps\b|\bxpu\b|\bnpu\b|\bhpu\b|lightning|Lightning|Fabric")


# HF `Trainer` (a module importing it, or subclassing it): it picks the accelerator itself.
_HF_TRAINER = (re.compile(r"\btransformers\b"), re.compile(r"Trainer\b"))


def _names_hf_trainer(source: str) -> bool:
    return all(p.search(source) for p in _HF_TRAINER)


def source_uses_accelerator(source: str) -> bool:
    return bool(_ACCELERATOR_SOURCE.search(source)) or _names_hf_trainer(source)


def source_names_accelerator(source: str) -> bool:
    return bool(_ACCELERATOR_NAMES.search(source)) or _names_hf_trainer(source)


class DeviceArguments:
    """Mixin of ValueAnalysis: where device arguments point."""

    @property
    def uses_accelerator(self) -> bool:
        """May this module's tensors be on an accelerator?

        No when the source never mentions a device, and no when its only device words are
        `device`/`.to(` and every device it passes is the CPU (`device = "cpu"`, then
        `.to(device)`): the user configured the CPU. A device the code cannot resolve (a
        parameter, `args.device`, `x.device`) counts as an accelerator.
        """
        return self._reused(self._module_facts, "accelerator", self._decide_accelerator)

    def factories_default_to_accelerator(self) -> bool:
        """Does this module make an accelerator the device factories fill by default
        (`torch.set_default_device("cuda")`, `torch.set_default_tensor_type(
        "torch.cuda.FloatTensor")`, under a condition or not)? Then `torch.zeros(n)` and
        `torch.Tensor(n, m)` are device tensors here, not host ones."""
        return self._reused(self._module_facts, "default-device", self._decide_default_device)

    def _decide_default_device(self) -> bool:
        for call in self.index.calls:
            qn = self.qualname(call.func) if call.args else None
            if qn == "torch.set_default_device" and self._device_arg(call.args[0].value, resolve_tensors=False) == "accelerator":
                return True
            if qn == "torch.set_default_tensor_type" and ".cuda." in str(self.qualname(call.args[0].value) or literal_value(call.args[0].value)[1]):
                return True
        return False

    def _decide_accelerator(self) -> bool:
        local = self._mentions_device and (self._names_accelerator or self._passes_a_non_cpu_device())
        # A helper module that never names a device still receives device tensors from the
        # modules of its project that use one (the project view says so).
        return local or self.env.project_uses_accelerator()

    def _passes_a_non_cpu_device(self) -> bool:
        for call in self.index.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
                return True
            devices = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"]
            is_move = isinstance(func, cst.Attribute) and func.attr.value == "to"
            if is_move or (self.qualname(func) or "") == "torch.device":
                devices += [a.value for a in call.args[:1] if a.keyword is None and not a.star]
            if any(self._device_arg(d, resolve_tensors=False) == "accelerator" for d in devices):
                return True
        return False

    def device_of(self, node: cst.BaseExpression) -> str | None:
        """For a device argument: "cpu", "accelerator", or None when it is not a device."""
        return self._device_arg(node)

    def _device_arg(self, node: cst.BaseExpression, resolve_tensors: bool = True, depth: int = 0) -> str | None:
        """"cpu" / "accelerator" for a device-like argument; None when it is not one (a dtype).

        ``resolve_tensors=False`` answers without evaluating any expression's kind (for
        ``uses_accelerator``, which kinds depend on): `t.device` is then an accelerator."""
        if depth > 8:
            return "accelerator"
        if isinstance(node, cst.SimpleString):
            value = evaluated_literal(node)
            text = value if isinstance(value, str) else ""
            if CPU_WORDS.match(text):
                return "cpu"
            return "accelerator" if ACCELERATOR_WORDS.search(text) else None
        if isinstance(node, cst.FormattedString):
            text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
            return "accelerator" if ACCELERATOR_WORDS.search(text) else None  # f"cuda:{local_rank}"
        if isinstance(node, cst.Integer):
            return "accelerator"  # `.to(0)` / `.cuda(0)`
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Modulo, cst.Add, cst.FloorDivide)):
            return "accelerator"  # a device index: `rank % torch.cuda.device_count()`
        qn = self.qualname(node) or ""
        if qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in tk.DTYPE_NAMES:
            return None
        if isinstance(node, cst.Call):
            cq = self.qualname(node.func) or ""
            if cq == "torch.device" and node.args:
                return self._device_arg(node.args[0].value, resolve_tensors, depth + 1)
            return "accelerator"
        if isinstance(node, cst.IfExp):
            sides = {self._device_arg(node.body, resolve_tensors, depth + 1), self._device_arg(node.orelse, resolve_tensors, depth + 1)}
            return "accelerator" if "accelerator" in sides else ("cpu" if sides == {"cpu"} else None)
        if isinstance(node, cst.Name):
            if "dtype" in node.value.lower():
                return None
            defs = self.reaching_defs(node)
            values = [d.value for d in defs if d.how == "assign" and d.value is not None]
            if values and len(values) == len(defs):
                kinds = {self._device_arg(v, resolve_tensors, depth + 1) for v in values}
                if kinds == {"cpu"}:
                    return "cpu"
                if kinds == {None}:
                    return None
            if defs and all(d.how == "param" for d in defs) and resolve_tensors:
                remote = self.env.param_device(defs[0].func, defs[0].param) if len(defs) == 1 else None
                if remote is not None:
                    return remote
                if len(defs) == 1 and self._cpu_by_default(defs[0], depth):
                    return "cpu"
            return "accelerator"
        if isinstance(node, cst.Attribute):
            if "dtype" in node.attr.value:
                return None
            if node.attr.value == "device":
                if not resolve_tensors:
                    return "accelerator"
                base = self._eval(node.value)
                return "cpu" if base in (Kind.HOST_TENSOR, Kind.CPU_MODEL) else "accelerator"
            return "accelerator"
        return None

    def _cpu_by_default(self, d, depth: int) -> bool:
        """`def sample(size, device="cpu")` that no call site here passes another device to
        (and no other module passes one to, or the project view would have answered): the
        user's default, the CPU."""
        default = d.param.default
        if default is None or self._device_arg(default, True, depth + 1) != "cpu":
            return False
        for call in self.index.call_sites(d.func):
            passed = self.index.argument_for(call, d.func, d.param)
            if passed is None or self._device_arg(passed, True, depth + 1) != "cpu":
                return False
        return True

    def copy_destination(self, call: cst.Call) -> str | None:
        """Where a copying method call sends its receiver (a method of COPY_METHODS):
        "accelerator", "cpu", or None (a dtype cast, or a place we cannot tell). `x.type_as(t)`
        is `x.to(t)`: the receiver goes where `t` is (and takes its dtype)."""
        method = call.func.attr.value  # type: ignore[union-attr]
        if method == "to":
            return self.to_destination(call)
        if method == "cuda":
            return "accelerator"
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if method == "type":
            return "accelerator" if positional and self.names_cuda_tensor_type(positional[0]) else None
        if method == "type_as" and len(positional) == 1:
            kind = self._eval(positional[0])
            return "accelerator" if kind in (Kind.DEVICE, Kind.MOVED) else "cpu" if kind is Kind.HOST_TENSOR else None
        return None

    def to_destination(self, call: cst.Call) -> str | None:
        """Where `x.to(...)` sends its receiver: "accelerator", "cpu", or None (dtype only)."""
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value == "device":
                    return self._device_arg(arg.value)
                continue
            where = self._device_arg(arg.value)
            if where is not None:
                return where
            if isinstance(arg.value, (cst.Name, cst.Attribute)) and self._eval(arg.value) is Kind.DEVICE:
                return "accelerator"  # `.to(other_tensor)`
            break  # only the first positional can be a device
        return None
