"""What a function's parameters hold: what its call sites pass (in this module and, with a
project view, in others), what a framework's hook contract says, or, for `*args`/`**kwargs`,
a container of what the calls pass beyond the named parameters. Also which literal default no
caller overrides (a branch on it is decided).

A mixin of ValueAnalysis (analysis/values.py): it uses its ``_eval``, ``qualname``,
``reaching_defs``, ``index`` and ``env``.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.index import Def, is_none, param_index
from torchsync_lint.analysis.kinds import Kind, join
from torchsync_lint.knowledge import lightning

# Parameters resolved inside one another (a call chain forwarding a value) before giving up:
# each level costs about ten Python frames, and the default stack holds 1,000.
MAX_PARAM_DEPTH = 40


_TENSOR_KINDS = frozenset({Kind.DEVICE, Kind.HOST_TENSOR})  # values that are tensors, never None


class ParameterKinds:
    def _param(self, d: Def) -> Kind | None:
        """A parameter is what its call sites pass (in this module and, with a project view,
        in others), or what its hook contract says."""
        if self._param_depth >= MAX_PARAM_DEPTH:
            # A chain of calls this long (f0(x) -> f1(x) -> ... each forwarding x) would exhaust
            # Python's stack; give up on this parameter instead. Treated as a cut, so nothing
            # computed on top of it is memoised.
            self._lowest_cut = -1
            return Kind.UNKNOWN
        self._param_depth += 1
        try:
            return self._param_kind(d)
        finally:
            self._param_depth -= 1

    def _param_kind(self, d: Def) -> Kind | None:
        func, param = d.func, d.param
        assert func is not None and param is not None
        info = self.index.class_of_method.get(func)
        position = param_index(func, param)
        if info is not None and position == 0 and self.is_module_class(info.node):
            return Kind.MODEL  # `self` of an nn.Module: `self(x)` is a forward
        if info is not None and position is not None and self.is_lightning_class(info.node):
            hook_params = lightning.BATCH_HOOK_PARAMS.get(func.name.value, ())
            if position - 1 in hook_params:
                return Kind.DEVICE  # Lightning moves the batch to the module's device first
        if info is not None and position is not None and position in lightning.CALLBACK_HOOK_PARAMS.get(func.name.value, ()) and self.is_lightning_callback(info.node):
            return Kind.DEVICE  # a callback's view of the step's outputs and batch
        if info is not None and position is not None and position in (self.framework_hook(func) or ()):
            return Kind.DEVICE  # a trainer framework's batch (prepared) or step outputs
        if position is not None and position == self.batch_function(func):
            return Kind.HOST_TENSOR  # a batch as the loader yields it: the engine moves nothing
        kinds = self.passed_kinds(self.index.call_sites(func), func, param)
        if kinds is None:
            return Kind.UNKNOWN
        remote = self.env.param_kind(func, param)
        if remote is not None:
            kinds.append(remote)
        joined = join(kinds) if kinds else Kind.UNKNOWN
        if joined is Kind.UNKNOWN and param.annotation is not None:
            # Only when the call sites do not say: an annotation names a type, not a place
            # (`data: torch.Tensor` handed a list of host samples is what the code passes).
            qn = self.qualname(param.annotation.annotation) or ""
            if qn in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
                return Kind.DEVICE
            if qn == "torch.nn.Module":
                return Kind.MODEL
        return joined

    def never_none(self, name: cst.Name) -> bool:
        """Does ``name`` read a parameter every call site fills with a tensor (here and in the
        modules the project view connects), none leaving it to a default or passing `None`?
        Then `if mask is None:` is never taken (glow-tts's `squeeze(x, x_mask=None)`, called
        with a mask everywhere)."""
        defs = self.reaching_defs(name)
        if len(defs) != 1 or defs[0].how != "param":
            return False
        func, param = defs[0].func, defs[0].param
        calls = self.index.call_sites(func)
        for call in calls:
            arg = self.index.argument_for(call, func, param)
            if arg is None or arg is param.default or is_none(arg) or any(a.star for a in call.args):
                return False
            if self._eval(arg) not in _TENSOR_KINDS:
                return False
        remote = self.env.param_never_none(func, param)
        return bool(calls) if remote is None else remote  # (None: no call site in another module)

    def passed_kinds(self, calls, func: cst.FunctionDef, param: cst.Param) -> list[Kind | None] | None:
        """What each of ``calls`` passes for ``param`` of ``func`` (calls that leave it to its
        default say nothing); None when one of them may pass it through `*args`/`**kwargs`."""
        kinds: list[Kind | None] = []
        for call in calls:
            arg = self.index.argument_for(call, func, param)
            if arg is None and any(a.star for a in call.args):
                return None
            if arg is not None:
                kinds.append(self._eval(arg))
        return kinds

    def unset_param_default(self, name: cst.Name) -> str | None:
        """"None"/"True"/"False" when ``name`` reads a parameter with that literal default that
        no call site passes (and there is at least one call site, here or in another module):
        the branch it decides is decided. None when anything else may hold."""
        defs = self.reaching_defs(name)
        if len(defs) != 1 or defs[0].how != "param":
            return None
        func, param = defs[0].func, defs[0].param
        default = param.default
        if not (isinstance(default, cst.Name) and default.value in ("None", "True", "False")):
            return None
        calls = self.index.call_sites(func)
        if any(any(a.star for a in c.args) or self.index.argument_for(c, func, param) is not default for c in calls):
            return None  # a call site passes it (or may, through `*args`/`**kwargs`)
        remote = self.env.param_passed(func, param)
        if remote is None or remote is True:
            return None  # unknown, or another module passes it
        if not calls and remote is False and not self.env.has_callers(func):
            return None
        return default.value

    def _star_param(self, d: Def) -> Kind | None:
        """`*args` / `**kwargs`: a container of what call sites pass beyond the named
        parameters (`logger.update(loss=loss)` puts a device tensor in `kwargs`)."""
        func, param = d.func, d.param
        keyword = param is func.params.star_kwarg
        kinds: list[Kind | None] = []
        for call in self.index.call_sites(func):
            # `update(total=loss, **parts)`: what is spelled out is known, the rest is not
            kinds += [self._eval(v) for v in self.index.extra_arguments(call, func, keyword)]
        remote = self.env.star_kind(func, keyword)
        if remote is not None:
            kinds.append(remote)
        holds = Kind.DEVICE in kinds or Kind.MOVED in kinds or Kind.CONTAINER in kinds
        return Kind.CONTAINER if holds else Kind.UNKNOWN  # a tuple (`*args`) or dict (`**kwargs`) of them
