"""What a call returns: torch functions and factories, tensor and module methods, same-module
functions and classes, project symbols (through ``self.env``) and library calls (through the
tables in torchsync_lint/knowledge/). Part of ValueAnalysis (values.py)."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.operand_helpers import OperandHelpers
from torchsync_lint.analysis.kinds import CALLABLE_MODELS, DEVICE_VALUES, HOST_KINDS, LOADER_KINDS, MODEL_KINDS, Kind, combine, join
from torchsync_lint.knowledge import gym, lightning, python, registry, torch_returns
from torchsync_lint.knowledge import torch as tk

# Builtins and modules whose results are host values whatever they are given.
HOST_BUILTINS = frozenset(
    "len int float bool str repr format isinstance issubclass type range id hash print "
    "open round chr ord hex oct bin callable hasattr getattr setattr dir vars input".split()
)
SAME_KIND_BUILTINS = frozenset("abs min max sum sorted reversed list tuple iter".split())
# ...of which these hold the very items they are given (`list(model.children())`).
CONTAINER_BUILTINS = frozenset("sorted reversed list tuple iter".split())
_FUNCTIONAL_BUILTINS = frozenset({"map", "filter"})
_ALWAYS_HOST_FACTORIES = frozenset({"from_numpy", "frombuffer"})  # they share host memory, whatever the default device
HOST_MODULE_PREFIXES = ("numpy.", "math.", "random.", "time.", "os.", "sys.", "json.", "pandas.", "statistics.", "np.", "pathlib.")

# Library table words -> kinds ("object" and "same" are handled where they are read).
_RETURNS = {
    "device": Kind.DEVICE,
    "host": Kind.HOST,
    "host-tensor": Kind.HOST_TENSOR,
    "model": Kind.MODEL,
    "cpu-model": Kind.CPU_MODEL,
    "loader": Kind.LOADER,
    "device-loader": Kind.DEVICE_LOADER,
    "optimizer": Kind.OPTIMIZER,
    "object": Kind.UNKNOWN,
    "accelerator-device": Kind.HOST,
}


def is_operand_function(qn: str) -> bool:
    """A torch function whose result is a tensor where its tensor arguments are (`torch.max(a,
    b)`, `torch.nn.functional.relu(x)`): the calls `_qualified_call` decides by their arguments
    (no table knows them, they build no object, read no host value and make no new tensor)."""
    if not qn.startswith("torch.") or registry.call_returns(qn) is not None:
        return False
    last = qn.rsplit(".", 1)[-1]
    if qn.startswith(("torch.optim.lr_scheduler.", "torch.optim.swa_utils.", *tk.HOST_NAMESPACES)) or qn.endswith("GradScaler"):
        return False
    if qn in tk.MODEL_WRAPPERS or qn in tk.NORM_FUNCTIONS or last.startswith(("is_", "has_", "get_", "are_")):
        return False
    if any(part[:1].isupper() for part in qn.split(".")[1:]) and not qn.startswith(tk.TENSOR_OBJECT_NAMESPACES):
        return False  # a module, an optimizer, an object, or a class's method (`nn.SyncBatchNorm.convert_sync_batchnorm`)
    return not (qn.count(".") == 1 and (last in tk.HOST_RESULTS or last in tk.FACTORIES or last in torch_returns.NEVER_TENSOR))


class CallKinds(OperandHelpers):
    """Mixin of ValueAnalysis: the kind of a call expression."""

    def _call(self, call: cst.Call) -> Kind | None:
        func = call.func
        qn = self.qualname(func)
        if qn is not None:
            remote = self.env.call_kind(qn, call, self)
            if remote is not None:
                return remote
            return self._qualified_call(qn, call)
        if isinstance(func, cst.Name):
            name = func.value
            if name in HOST_BUILTINS and not self.index.binds_locally(name, func):
                return Kind.HOST
            if name == "next" and call.args and not self.index.binds_locally(name, func):
                return self._iter_element(call.args[0].value, ())  # `next(batches)`: one item
            if name in SAME_KIND_BUILTINS and not self.index.binds_locally(name, func):
                kinds = [self._eval(a.value) for a in call.args]
                if name in CONTAINER_BUILTINS and len(kinds) == 1 and kinds[0] in MODEL_KINDS:
                    return kinds[0]  # a list of a model's submodules: modules where the model is
                if name not in CONTAINER_BUILTINS and len(kinds) == 1 and kinds[0] is Kind.CONTAINER:
                    return Kind.DEVICE  # `sum(losses)`, `max(scores)`: a tensor of the ones it holds
                return combine(*kinds) if call.args else Kind.UNKNOWN
            if name == "filter" and len(call.args) == 2 and not self.index.binds_locally(name, func):
                return self._eval(call.args[1].value)  # `filter(pred, params)` keeps some of them, where they are
            if name in _FUNCTIONAL_BUILTINS and not self.index.binds_locally(name, func):
                mapped = call.args[0].value if call.args else None
                if name == "map" and type(mapped) is cst.Name and mapped.value in HOST_BUILTINS and not self.index.binds_locally(mapped.value, mapped):
                    return Kind.HOST  # `map(len, labels)`: Python values, whatever it maps over
                return Kind.UNKNOWN  # `map(lambda t: t.item(), ts)`: what the function makes of them
            cls = self.index.local_class(func)
            if cls is not None:
                return self._class_instance(cls.node)
        target = self.index.target_of(call)
        if target is not None and not (target.name.value in ("forward", "__call__") and not isinstance(func, cst.Attribute) and self._eval(func) in CALLABLE_MODELS):
            return self._function_result(target, call)
        if isinstance(func, cst.Attribute):
            parts = dotted_parts(func)
            if parts and len(parts) == 2 and parts[0] == "self":
                attr = self._self_attr(func, parts[1])
                if attr in CALLABLE_MODELS or attr in DEVICE_VALUES or self._stored_callable(func, parts[1]):
                    # `self.model(x)`: a submodule's forward; `self.criterion(out, y)`: the
                    # object or function the constructor was given, called on device tensors
                    return self._call_of(attr, call)
            return self._method_call(call, func)
        return self._call_of(self._eval(func), call)

    def _stored_callable(self, node: cst.Attribute, attr: str) -> bool:
        """Is `self.<attr>` something other than a method this class defines: a value stored
        on the instance, here or by a base class (`self.model`, `self.loss_func` of a trainer
        framework), or a base's method? Called on device tensors it gives device values."""
        info = self.index.class_of(node)
        return info is not None and attr not in info.methods

    def _call_of(self, callee: Kind | None, call: cst.Call) -> Kind:
        """Calling a model (a forward), or an unknown callable (a criterion) on device tensors."""
        args = {self._eval(a.value) for a in call.args}  # (`model(**batch)`: the dict's tensors)
        device_args = not args.isdisjoint(DEVICE_VALUES)
        if callee is Kind.CPU_MODEL:
            return Kind.DEVICE if device_args else Kind.HOST_TENSOR
        if callee in (Kind.MODEL, Kind.MOVED, Kind.PREPARED):
            return Kind.DEVICE if device_args or Kind.MOVED in args or self.uses_accelerator else Kind.HOST_TENSOR
        if callee is Kind.DEVICE:
            return Kind.DEVICE
        if callee in (None, Kind.UNKNOWN) and device_args:
            if self.env.host_call_result(call):
                return Kind.HOST  # a project function (a closure a factory returned) that returns host values
            return Kind.DEVICE  # `criterion(out, y)`: an opaque function of device tensors
        return Kind.UNKNOWN

    def _function_result(self, func: cst.FunctionDef, call: cst.Call | None = None) -> Kind | None:
        """What ``func`` returns. A return of a bare parameter (`def default(val, d): ...
        return val`) is what *this* call passes for it: a helper used with device tensors in one
        place and with numbers in another does not make every result a device tensor."""
        returns = self.index.returns.get(func, [])
        if not returns:
            return Kind.UNKNOWN if self._is_generator(func) else Kind.HOST  # returns None
        kinds = []
        for r in returns:
            chosen = self._chosen_arguments(r, func, call) if call is not None else None
            if chosen is not None:
                kinds.append(join(self._eval(a) for a in chosen))  # `return v if exists(v) else d`: one of this call's arguments
                continue
            passed = self._passed_for(r, func, call) if call is not None else None
            if passed is not None and self._not_a_tensor_here(r, self.reaching_defs(r)):
                kinds.append(Kind.HOST)  # `if isinstance(data, np.ndarray): return data`: never the tensor passed
                continue
            kinds.append(self._eval(passed) if passed is not None else self._eval(r))
        result = join(kinds) if any(k is not None for k in kinds) else None
        if result in DEVICE_VALUES and call is not None and self._given_host_tensors(call) and self._places_like_operands(func):
            return Kind.HOST_TENSOR  # `iou(boxes.cpu(), anchors)`: computed where its operands are, the host
        return result

    def _chosen_arguments(self, expr: cst.BaseExpression, func: cst.FunctionDef, call: cst.Call) -> list[cst.BaseExpression] | None:
        """The arguments of ``call`` a return picks between, when it is a choice of bare
        parameters (`v if exists(v) else d`, `v or d`); None otherwise."""
        kind = type(expr)
        if kind is cst.IfExp:
            sides = (expr.body, expr.orelse)
        elif kind is cst.BooleanOperation:
            sides = (expr.left, expr.right)
        else:
            return None
        passed = [self._passed_for(side, func, call) for side in sides]
        return passed if all(p is not None for p in passed) else None

    def _passed_for(self, expr: cst.BaseExpression, func: cst.FunctionDef, call: cst.Call) -> cst.BaseExpression | None:
        """The argument ``call`` passes for the parameter ``expr`` reads, when it is one."""
        if not isinstance(expr, cst.Name):
            return None
        defs = self.reaching_defs(expr)
        if len(defs) != 1 or defs[0].how != "param" or defs[0].func is not func:
            return None
        return self.index.argument_for(call, func, defs[0].param)

    def _is_generator(self, func: cst.FunctionDef) -> bool:
        return bool(self.index.tree.yields(func))

    def _class_instance(self, cls: cst.ClassDef) -> Kind:
        """A module built here lives on the CPU until moved (see ValueAnalysis._def)."""
        if self.is_loader_class(cls):
            return Kind.LOADER
        return Kind.CPU_MODEL if self.is_module_class(cls) else Kind.UNKNOWN

    # -- library calls ------------------------------------------------------------------------
    def _qualified_call(self, qn: str, call: cst.Call) -> Kind:
        last = qn.rsplit(".", 1)[-1]
        if qn.startswith(HOST_MODULE_PREFIXES):
            return Kind.HOST
        if python.is_stdlib_predicate(qn):
            return Kind.HOST  # `inspect.isfunction(d)`, `operator.is_(a, b)`: a Python bool, whatever it is given
        if python.makes_no_device_tensor(qn):
            return Kind.UNKNOWN  # `hashlib.sha1(t)`, `pickle.loads(b)`, `queue.Queue()`: not a tensor it made
        keywords = frozenset(a.keyword.value for a in call.args if a.keyword is not None)
        known = registry.call_returns(qn, keywords)
        if known is not None:
            return self._library_result(known, call)
        if qn.startswith(("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")):
            return Kind.UNKNOWN  # a scheduler steps per epoch; it is not an optimizer
        if qn.startswith("torch.optim.") and last[:1].isupper() or qn.endswith("GradScaler"):
            return Kind.OPTIMIZER
        if qn in tk.MODEL_WRAPPERS:
            if not call.args:
                return Kind.UNKNOWN
            wrapped = self._eval(call.args[0].value)
            return wrapped if wrapped in MODEL_KINDS or wrapped is Kind.MOVED else (Kind.MODEL if wrapped is Kind.UNKNOWN else Kind.UNKNOWN)
        if qn.startswith("torch.nn.") and last[:1].isupper() and not qn.startswith("torch.nn.functional."):
            return Kind.CPU_MODEL  # a module built here: on the CPU until moved
        if qn.startswith("torchmetrics.") and last[:1].isupper():
            return Kind.MODEL  # a metric is an nn.Module: `metric.to(device)` is not a device tensor
        if qn in tk.NORM_FUNCTIONS:
            return Kind.DEVICE  # the total norm, a tensor on the parameters' device
        if qn.startswith(tk.HOST_NAMESPACES):
            return Kind.HOST
        if qn in tk.LEGACY_CONSTRUCTORS:
            if qn == "torch.Tensor" and self.factories_default_to_accelerator():
                return Kind.DEVICE  # the default tensor type is a CUDA one here
            return Kind.HOST_TENSOR  # `torch.FloatTensor(np_array)`, `torch.LongTensor(n, m)`: built on the CPU
        if qn.startswith("torch.") and last[:1].isupper() and not qn.startswith(tk.TENSOR_OBJECT_NAMESPACES):
            return Kind.UNKNOWN  # an object: `SummaryWriter(...)`, `cuda.Event()`, `utils.data.Subset(...)`
        if qn.startswith("torch.") and last.startswith(("is_", "has_", "get_", "are_")):
            return Kind.HOST  # predicates and getters (`is_traceable_wrapper_subclass(t)`) return Python values
        if qn.startswith("torch.") and qn.count(".") == 1:
            if last in tk.HOST_RESULTS or last in torch_returns.NEVER_TENSOR:
                return Kind.HOST  # (`torch.finfo(t.dtype).min`: a Python float, by torch's annotations)
            if last in tk.FACTORIES:
                return self._factory(last, call)
        if is_operand_function(qn):
            args = [self._eval(a.value) for a in call.args]
            if Kind.DEVICE in args or Kind.MOVED in args or Kind.CONTAINER in args:
                return Kind.DEVICE  # (`torch.cat([a, b])`: of the tensors the list holds)
            if args and all(a in HOST_KINDS for a in args):
                return Kind.HOST_TENSOR
            return Kind.UNKNOWN
        if qn in lightning.LIGHTNING_MODULES:
            return Kind.MODEL
        if python.passes_values(qn) and call.args and all(not a.star and self._eval(a.value) is Kind.HOST for a in call.args):
            return Kind.HOST  # `itertools.permutations(range(n), n)`: made of the Python values it is given
        # A class or function imported from elsewhere: an opaque callable that gives device
        # results from device tensor inputs.
        return self._call_of(Kind.UNKNOWN, call)

    def _library_result(self, returns: str, call: cst.Call | None) -> Kind:
        if call is None:
            return _RETURNS.get(returns, Kind.UNKNOWN)
        if returns == "device-loader" and any(a.keyword is not None and a.keyword.value in lightning.NO_MOVE_KEYWORDS and _is_false(a.value) for a in call.args):
            return Kind.LOADER  # `fabric.setup_dataloaders(loader, move_to_device=False)`
        if returns == "same":
            return self._eval(call.args[0].value) if call.args else Kind.UNKNOWN
        if returns == "prepared":
            kinds = [self._prepared(a.value) for a in call.args if not a.star]
            return kinds[0] if len(kinds) == 1 else Kind.UNKNOWN
        return _RETURNS.get(returns, Kind.UNKNOWN)

    def _prepared(self, arg: cst.BaseExpression) -> Kind:
        """What accelerate's `prepare` / Fabric's `setup` hands back for one argument."""
        kind = self._eval(arg)
        if kind in MODEL_KINDS or kind is Kind.MOVED:
            return Kind.MODEL
        if kind in LOADER_KINDS:
            return Kind.DEVICE_LOADER  # every batch is sent to the device as it is yielded
        if kind is Kind.OPTIMIZER:
            return kind
        return Kind.PREPARED  # placed for the run, whatever it is

    def _factory(self, last: str, call: cst.Call) -> Kind:
        device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
        if device is not None:
            where = self._device_arg(device)
            return Kind.HOST_TENSOR if where == "cpu" else Kind.DEVICE
        if last in tk.LIKE_FACTORIES or last in tk.DATA_FACTORIES:
            if not call.args:
                return Kind.UNKNOWN
            source = self._eval(call.args[0].value)
            if source in (Kind.DEVICE, Kind.MOVED, Kind.CONTAINER):
                return Kind.DEVICE
            if source in HOST_KINDS:
                return Kind.HOST_TENSOR
            # `randn_like(t)` of a tensor of unknown place is wherever `t` is; `as_tensor(data)`
            # of unknown data likewise (a tensor keeps its device)
            return Kind.UNKNOWN
        if last in _ALWAYS_HOST_FACTORIES or not self.factories_default_to_accelerator():
            return Kind.HOST_TENSOR  # created on the CPU
        return Kind.DEVICE  # on the default device, an accelerator here (`torch.set_default_device`)

    # -- methods --------------------------------------------------------------------------------
    def _method_call(self, call: cst.Call, func: cst.Attribute) -> Kind | None:
        method = func.attr.value
        origin = self.origin_qualname(func.value)
        if origin is not None and self.qualname(func.value) is None:
            known = registry.method_returns(origin, method)
            if known is not None:
                return self._library_result(known, call)
        receiver = self._eval(func.value)
        if receiver is Kind.PREPARED:
            receiver = Kind.MOVED  # a prepared module's methods, or a tensor method: as for a moved object
        if method in ("to", "cuda", "cpu", "pin_memory"):
            return self._move(call, method, receiver)
        if method in ("type", "type_as") and receiver not in MODEL_KINDS and self.copy_destination(call) == "accelerator":
            return Kind.DEVICE  # `x.type(torch.cuda.FloatTensor)`, `x.type_as(device_tensor)`: a copy to the GPU
        if method in tk.HOST_RESULT_WITHOUT_ARGUMENTS and not call.args and receiver in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.MOVED):
            return Kind.HOST  # `x.type() == 'torch.cuda.HalfTensor'`: a str, no read of the data
        if receiver in MODEL_KINDS or (receiver is Kind.MOVED and method in tk.MODULE_METHODS):
            return self._module_method(call, method, receiver)
        if receiver is Kind.MOVED:
            if method in tk.TENSOR_METHODS:
                return Kind.HOST if method in tk.HOST_RESULT_METHODS else Kind.DEVICE
            # a method only a module of ours defines (`agent.get_action(obs)`): a forward of
            # device inputs, else unknown
            return Kind.DEVICE if any(self._eval(a.value) in _HOLDS_DEVICE for a in call.args) else Kind.UNKNOWN
        if receiver is Kind.CONTAINER:
            return _CONTAINER_METHODS.get(method, Kind.DEVICE)
        if receiver is Kind.DEVICE:
            if method in tk.HOST_RESULT_METHODS:
                return Kind.HOST
            if method in tk.TENSOR_METHODS or method in tk.TENSOR_OBJECT_METHODS:
                return Kind.DEVICE
            if method in _CONTAINER_METHODS:
                return _CONTAINER_METHODS[method]  # a container taken for a tensor: `losses._asdict()` of a namedtuple
            # torch.Tensor has no such method, nor a distribution (a method of a class of this
            # module was resolved above, index.target_of): the receiver is some object a device
            # value was taken for (a pipeline's PIL image, `hashlib.sha1(...)`): its method makes
            # a device value only of device arguments, as an opaque function does (the project
            # view reads only tensor methods as "where the receiver is": the same rule)
            return Kind.DEVICE if any(self._eval(a.value) in _HOLDS_DEVICE for a in call.args) else Kind.UNKNOWN
        if receiver is Kind.HOST_TENSOR:
            return Kind.HOST if method in tk.HOST_RESULT_METHODS else Kind.HOST_TENSOR
        if receiver is Kind.HOST:
            return Kind.HOST
        if method in ("item", "tolist", "numpy", "__len__"):
            return Kind.HOST
        if method in ("detach", "clone", "contiguous", "float", "half", "long", "mean", "sum"):
            return receiver
        return Kind.UNKNOWN

    def names_cuda_tensor_type(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`torch.cuda.FloatTensor`, or a name bound to it on some path
        (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`)."""
        if depth > 4:
            return False
        if (self.qualname(expr) or "").startswith("torch.cuda.") and (self.qualname(expr) or "").endswith("Tensor"):
            return True
        if isinstance(expr, cst.IfExp):
            return self.names_cuda_tensor_type(expr.body, depth + 1) or self.names_cuda_tensor_type(expr.orelse, depth + 1)
        if isinstance(expr, cst.Name):
            return any(d.how == "assign" and d.value is not None and self.names_cuda_tensor_type(d.value, depth + 1) for d in self.reaching_defs(expr))
        return False

    def _move(self, call: cst.Call, method: str, receiver: Kind | None) -> Kind | None:
        """`.to(...)`, `.cuda()`, `.cpu()`, `.pin_memory()`."""
        if receiver in MODEL_KINDS:
            if method == "cpu" or (method == "to" and self.to_destination(call) == "cpu"):
                return Kind.CPU_MODEL
            return Kind.MODEL if method in ("to", "cuda") else receiver
        if method in ("cpu", "pin_memory"):
            return Kind.HOST_TENSOR if receiver is not Kind.MOVED else Kind.UNKNOWN
        where = "accelerator" if method == "cuda" else self.to_destination(call)
        if receiver is Kind.CONTAINER:  # a dict-like batch's own `.to()` (HF BatchEncoding)
            return Kind.HOST_TENSOR if where == "cpu" else Kind.CONTAINER
        if where == "accelerator":
            if receiver in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST, *LOADER_KINDS) or not self._may_be_module(call.func.value):
                return Kind.DEVICE  # a tensor: a batch, part of one, or a tensor method's result
            return Kind.MOVED  # a tensor or a module: decided by how it is used
        if where == "cpu":
            return Kind.HOST_TENSOR if receiver is not Kind.MOVED else Kind.UNKNOWN
        return receiver  # `.to(torch.float16)` keeps the device

    def _may_be_module(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Could ``expr`` (of unknown kind) be an nn.Module? Objects built by a call
        (`Net()`, `build(cfg)`), parameters and attributes could; loop items (batches),
        subscripts (`batch["x"]`) and tensor methods' results (`x.float()`) are data."""
        if depth > 4:
            return True
        if isinstance(expr, cst.Subscript):
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            qn = self.qualname(func) or ""
            if qn.startswith("torch.") and qn.count(".") == 1 and qn[6:7].islower():
                return False  # `torch.cat(xs)`, `torch.stack(xs)`: torch functions make tensors
            return not (isinstance(func, cst.Attribute) and func.attr.value in tk.TENSOR_METHODS and func.attr.value not in tk.SHARED_METHODS)
        if isinstance(expr, cst.Name):
            defs = self.reaching_defs(expr)
            if not defs:
                return True
            for d in defs:
                if d.how in ("for",) or (d.how == "unpack" and isinstance(d.stmt, (cst.For, cst.CompFor))):
                    continue  # an item of a loop: a batch
                if d.how == "assign" and d.value is not None and not self._may_be_module(d.value, depth + 1):
                    continue
                return True
            return False
        return True

    def _module_method(self, call: cst.Call, method: str, receiver: Kind | None) -> Kind:
        on_cpu = receiver is Kind.CPU_MODEL
        if method in tk.MODEL_METHODS_RETURNING_MODEL:
            return receiver if receiver in MODEL_KINDS else Kind.MODEL
        if method in tk.MODEL_TENSOR_ITERATORS:
            return Kind.HOST_TENSOR if on_cpu else Kind.DEVICE
        if method in tk.MODEL_SUBMODULE_ITERATORS:
            return receiver if receiver in MODEL_KINDS else Kind.MODEL
        if method == "forward":
            return self._call_of(receiver, call)
        if method in tk.MODULE_METHODS:
            return Kind.UNKNOWN
        if any(self._eval(a.value) in _HOLDS_DEVICE for a in call.args):
            return Kind.DEVICE  # `policy.act(obs)`: a method of a model on device inputs
        return Kind.UNKNOWN

    # -- projections used by values.py ----------------------------------------------------------
    def call_element(self, call: cst.Call, position: int) -> list | None:
        """Kinds that element ``position`` of a library call's result may be, when a table
        or a shape rule says (None: unknown)."""
        func = call.func
        if isinstance(func, cst.Attribute):
            origin = self.origin_qualname(func.value)
            if origin is not None and registry.method_returns(origin, func.attr.value) == "prepared":
                args = [a.value for a in call.args if not a.star]
                return [self._prepared(args[position])] if position < len(args) and not any(a.star for a in call.args) else None
            if func.attr.value in gym.METHODS_RETURNING_HOST and (origin is not None and registry.is_environment(origin) or self._unpacked_as_env_step(call)):
                return [Kind.HOST]  # numpy observations, rewards, flags and info dicts
        qn = self.qualname(func)
        if qn is not None:
            remote = self.env.call_element(qn, call, position, self)
            if remote is not None:
                return [remote]
        elif type(func) in (cst.Name, cst.Attribute):
            maker = self.origin_qualname(func)  # `scores, lengths = decoder(x)`: an instance of a project class, called
            if maker is not None and self.env.forward_element_is_host(maker, position):
                return [Kind.HOST]  # its forward returns a host value there (`lengths.tolist()`)
        return None

    def _unpacked_as_env_step(self, call: cst.Call) -> bool:
        """`obs, reward, done, info = envs.step(action)`: the gym API's shape."""
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
            return False
        parent = self.index.parent(call)
        if not isinstance(parent, cst.Assign) or parent.value is not call:
            return False
        return any(isinstance(t.target, (cst.Tuple, cst.List)) and len(t.target.elements) in gym.ENV_STEP_ARITIES for t in parent.targets)

    def call_iter_element(self, iterable: cst.Call, path: tuple[int, ...]) -> Kind | None:
        """Kind of (part of) one item of iterating a call's result; None when not known here."""
        qn = self.qualname(iterable.func)
        fname = qn or (iterable.func.value if isinstance(iterable.func, cst.Name) else None)
        args = [a.value for a in iterable.args if a.keyword is None and not a.star]
        if fname == "enumerate" and args:
            if not path:
                return Kind.UNKNOWN
            return Kind.HOST if path[0] == 0 else self._iter_element(args[0], path[1:])
        if fname == "zip" and args:
            if not path:
                return Kind.UNKNOWN
            return self._iter_element(args[path[0]], path[1:]) if 0 <= path[0] < len(args) else Kind.UNKNOWN
        if fname in ("iter", "reversed") and args and not self.index.binds_locally(fname, iterable):
            return self._iter_element(args[0], path)
        if qn is not None and registry.is_item_wrapper(qn) and args:
            return self._iter_element(args[0], path)
        if fname == "range":
            return Kind.HOST
        if isinstance(iterable.func, cst.Attribute):
            method = iterable.func.attr.value
            if method == "keys" or (method == "items" and path[:1] == (0,)):
                return Kind.HOST  # dict keys: names, not tensors
            receiver = self._eval(iterable.func.value)
            if method in tk.MODEL_NAMED_TENSOR_ITERATORS and (receiver in MODEL_KINDS or receiver is Kind.MOVED):
                if path[:1] == (0,):
                    return Kind.HOST  # the parameter's name
                tensor = Kind.HOST_TENSOR if receiver is Kind.CPU_MODEL else Kind.DEVICE
                return tensor if path[:1] == (1,) and len(path) == 1 else Kind.UNKNOWN
            origin = self.origin_qualname(iterable.func.value)
            if origin is not None and registry.method_returns(origin, method) in ("same",) and iterable.args:
                return self._iter_element(iterable.args[0].value, path)  # `accelerator.skip_first_batches(loader, n)`
        yielded = self._generator_items(iterable)
        if yielded is not None:
            return self._iter_element(yielded, path)
        return None

    def _generator_items(self, call: cst.Call) -> cst.BaseExpression | None:
        """The argument whose items a same-module generator yields one by one
        (`def log_every(self, iterable, n): for obj in iterable: ... yield obj`)."""
        target = self.index.target_of(call)
        if target is None:
            return self.env.generator_source(call, self)
        param = self.yielded_param(target)
        return self.index.argument_for(call, target, param) if param is not None else None

    def yielded_param(self, func: cst.FunctionDef) -> cst.Param | None:
        """The parameter whose items ``func`` (a generator) yields one by one, if it does:
        `for obj in iterable: yield obj`, also through `enumerate(iterable)`."""
        yields = self.index.tree.yields(func)
        if not yields:
            return None
        sources = set()
        for y in yields:
            if not isinstance(y.value, cst.Name):
                return None
            defs = self.reaching_defs(y.value)
            if len(defs) != 1 or defs[0].how not in ("for", "unpack") or not isinstance(defs[0].stmt, cst.For):
                return None
            iterable, path = defs[0].value, defs[0].path
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate" and path == (1,) and iterable.args:
                iterable, path = iterable.args[0].value, ()
            if path or not isinstance(iterable, cst.Name):
                return None
            loop_defs = self.reaching_defs(iterable)
            if len(loop_defs) != 1 or loop_defs[0].how != "param":
                return None
            sources.add(loop_defs[0].param)
        return sources.pop() if len(sources) == 1 else None


_HOLDS_DEVICE = DEVICE_VALUES | {Kind.MOVED}
# A container's methods: host answers about its shape, the tensors it holds, or views of them.
_CONTAINER_METHODS = {
    **dict.fromkeys(("keys", "__len__", "count", "index", "__contains__"), Kind.HOST),
    **dict.fromkeys(("values", "items", "copy", "_asdict", "_replace"), Kind.CONTAINER),  # (`_asdict`: a namedtuple's)
}


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"
