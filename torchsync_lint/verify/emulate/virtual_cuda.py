"""Virtual CUDA: run the real script on CPU while tracking which tensors would live on the GPU.

Two torch modes cooperate:

* ``VirtualCudaFunctionMode`` (TorchFunctionMode) sees Python-level calls. It rewrites
  ``device="cuda"`` to CPU (and tags the result), reports ``.device``/``.is_cuda``/
  ``.is_pinned()`` as the real GPU run would, classifies host<->device moves, and sees host
  reads that never reach the dispatcher for CPU tensors (``tolist``, ``__repr__``...).
* ``VirtualCudaDispatchMode`` (TorchDispatchMode) sees every aten op, including those inside
  torchmetrics and autograd. It propagates the tag, flags the ops whose CUDA implementation
  synchronises, and tracks host-side provenance (uint8 -> float normalisation, DataLoader
  origin) for the input-pipeline rules.

Values are real (CPU math), so data-dependent control flow such as ``if nans.any():`` takes
the same branch it would on the GPU. Tags live in weak identity dictionaries owned by one
``VirtualCudaState``: nothing outlives a run.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

from torchsync_lint.verify import evidence as ev

VIRTUAL_DEVICE = torch.device("cuda", 0)

# Host reads that never reach the dispatcher for a CPU tensor (seen by the function mode).
HOST_READ_METHODS = frozenset({"tolist", "__repr__", "__str__", "__array__"})
# Python-level reads of a device tensor whose sync the dispatcher sees only as
# _local_scalar_dense: remembered while they run, so a sync says whether it was a truth test,
# a format or a plain read (the sync budget counts them apart; sites.py).
PYTHON_READS = frozenset({"item", "__bool__", "__float__", "__int__", "__index__", "__format__", "__repr__", "__str__", "tolist"})
# Ops whose result holds the same values as their input (a deferred read follows them).
SAME_VALUE_OPS = frozenset({"aten::detach", "aten::alias", "aten::clone", "aten::_to_copy"})
# Factories that copy host data to the target device.
HOST_DATA_FACTORIES = frozenset({"tensor", "as_tensor", "asarray", "from_numpy"})

_DEVICE_GET = torch.Tensor.device.__get__
_IS_CUDA_GET = torch.Tensor.is_cuda.__get__
_IS_CPU_GET = torch.Tensor.is_cpu.__get__


def is_cuda_device(device: Any) -> bool:
    if device is None or isinstance(device, bool):
        return False
    if isinstance(device, int):
        return True  # a bare ordinal means a CUDA device in torch's device arguments
    if isinstance(device, (str, torch.device)):
        try:
            return torch.device(device).type == "cuda"
        except RuntimeError:
            return False
    return False


@dataclass(frozen=True)
class RawEvent:
    line: int
    kind: str
    op: str
    clock: tuple[int, int]  # (optimizer_steps, batches) when it happened
    site: int | None = None  # index into the run's site table (sites.py), when sites are located


@dataclass(frozen=True)
class LoaderOrigin:
    line: int
    pinned: bool


class VirtualCudaState:
    """Tags and recorded events of one emulated run."""

    def __init__(self, user_line: Callable[[], int], clock: Callable[[], tuple[int, int]]) -> None:
        self.user_line = user_line
        self._clock = clock
        self.virtual = WeakIdKeyDictionary()  # tensor -> True: would live on the GPU
        self.pinned = WeakIdKeyDictionary()  # tensor -> True: would be in page-locked memory
        self.host_normalized = WeakIdKeyDictionary()  # CPU float tensor derived from uint8 -> line it was made
        self.loader_origin = WeakIdKeyDictionary()  # CPU tensor -> LoaderOrigin of the batch it came from
        # tensor -> line of the user's logging call that handed it to a library which reads it
        # later in the step (Lightning's self.log; see emulate/sinks.py)
        self.read_lines = WeakIdKeyDictionary()
        self.events: list[RawEvent] = []
        # > 0 while code that allocates on the GPU from C++ runs (DDP's reducer buckets): its
        # factory ops have no tensor input to inherit the tag from, so they are tagged directly.
        self.device_allocations = 0
        # Script lines of the library transforms running now (innermost last): a float they make
        # from uint8 is attributed to the line that built the transform (library_hooks.py).
        self.transform_lines: list[int] = []
        # (label, kind) of the library code running now whose syncs need naming (GradScaler's
        # found_inf read, torchmetrics' cross-rank gather); kind, if given, replaces a sync's kind.
        self._contexts: list[tuple[str, str | None]] = []
        self._noted: set[tuple[int, str]] = set()
        # Where each event happened in the project (sites.SiteFinder.locate), when set.
        self.locate: Callable[[int | None], int] | None = None
        self.reads: list[str] = []  # PYTHON_READS of a device tensor running now (innermost last)

    # -- tags -------------------------------------------------------------------------------
    def is_virtual(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and self.virtual.get(value, False)

    def any_virtual(self, values: Any) -> bool:
        return any(self.is_virtual(leaf) for leaf in pytree.tree_leaves(values))

    def tag_virtual(self, values: Any) -> None:
        for leaf in pytree.tree_leaves(values):
            if isinstance(leaf, torch.Tensor):
                self.virtual[leaf] = True
                self.host_normalized.pop(leaf, None)
                self.loader_origin.pop(leaf, None)

    def untag_virtual(self, tensor: torch.Tensor) -> None:
        self.virtual.pop(tensor, None)

    def read_line(self, leaves: list) -> int | None:
        """The logging line a deferred read of one of ``leaves`` belongs to, if any."""
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor) and leaf in self.read_lines:
                return self.read_lines[leaf]
        return None

    def normalizing_line(self) -> int:
        """The line a host float made from uint8 right now is attributed to."""
        return self.transform_lines[-1] if self.transform_lines else self.user_line()

    # -- events -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def context(self, label: str, kind: str | None = None) -> Iterator[None]:
        """Events recorded inside are labelled ``op in label`` (and their sync kind replaced by
        ``kind``): the user line alone would not say that the sync came from library code."""
        self._contexts.append((label, kind))
        try:
            yield
        finally:
            self._contexts.pop()

    def record(self, kind: str, op: str, line: int | None = None) -> None:
        if self._contexts:
            label, context_kind = self._contexts[-1]
            op = f"{op} in {label}"
            if context_kind is not None and kind in ev.SYNC_KINDS:
                kind = context_kind
        site = None if self.locate is None else self.locate(line)
        self.events.append(RawEvent(self.user_line() if line is None else line, kind, op, self._clock(), site))

    def note(self, text: str) -> None:
        """Something the emulation did differently from a GPU run, once per line (the report shows it)."""
        line = self.user_line()
        if (line, text) not in self._noted:
            self._noted.add((line, text))
            site = None if self.locate is None else self.locate(None)
            self.events.append(RawEvent(line, ev.EMULATED, text, self._clock(), site))

    def record_host_to_device(
        self, source: torch.Tensor, non_blocking: bool, op: str, *, pinned: bool | None = None, record_blocking: bool = True
    ) -> None:
        """Classify a copy of a host tensor to the (virtual) GPU.

        The cuda backend passes the real ``pinned`` state and ``record_blocking=False``: there
        a blocking copy is recorded by the stream-sync callback it triggers.
        """
        is_pinned = self.pinned.get(source, False) if pinned is None else pinned
        if not non_blocking:
            if record_blocking:
                self.record(ev.H2D_BLOCKING, op)
        elif not is_pinned:
            self.record(ev.H2D_PAGEABLE, op)
        origin = self.loader_origin.get(source)
        if origin is not None and not origin.pinned and not is_pinned:
            self.record(ev.DATALOADER_UNPINNED, op, line=origin.line)
        made_at = self.host_normalized.get(source)
        if made_at is not None:
            detail = f"{op} of host-normalized {source.dtype} ({source.element_size()}x the bytes of uint8)"
            self.record(ev.HOST_NORMALIZED_H2D, detail)
            if made_at:
                self.record(ev.HOST_NORMALIZED_H2D, detail, line=made_at)


def _parse_move(
    name: str, args: tuple, kwargs: dict, device_of: Callable[[torch.Tensor], Any]
) -> tuple[Any, dict, bool]:
    """Split a Tensor.to/.cuda/.cpu call into (target device, remaining .to kwargs, non_blocking).

    Covers to(device, dtype, non_blocking, copy), to(dtype, ...), to(other_tensor, ...),
    cuda(device=None, non_blocking=False) and cpu(). ``device_of`` gives the device a tensor
    would be on (``to(other)`` follows ``other`` onto the virtual GPU).
    """
    rest = dict(kwargs)
    device = rest.pop("device", None)
    non_blocking = bool(rest.pop("non_blocking", False))
    if name == "cuda":
        positional = list(args[1:])
        if positional and device is None:
            device = positional.pop(0)
        if positional:
            non_blocking = bool(positional.pop(0))
        return (device if device is not None else "cuda"), rest, non_blocking
    if name == "cpu":
        return "cpu", rest, False
    flags: list[bool] = []
    for arg in args[1:]:
        if isinstance(arg, bool):
            flags.append(arg)
        elif isinstance(arg, torch.dtype):
            rest["dtype"] = arg
        elif isinstance(arg, torch.Tensor):
            device, rest["dtype"] = device_of(arg), arg.dtype
        elif isinstance(arg, (str, torch.device, int)):
            device = arg
    if flags:
        non_blocking = flags[0]
    if len(flags) > 1:
        rest["copy"] = flags[1]
    return device, rest, non_blocking


class VirtualCudaFunctionMode(TorchFunctionMode):
    def __init__(self, state: VirtualCudaState) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        state = self.state
        receiver = args[0] if args and isinstance(args[0], torch.Tensor) else None

        # Properties: answer as the GPU run would, so `torch.zeros(n, device=x.device)` and
        # `torch.tensor(v, device=loss.device)` in the script take the CUDA path.
        if func == _DEVICE_GET:
            return VIRTUAL_DEVICE if state.is_virtual(receiver) else func(*args, **kwargs)
        if func == _IS_CUDA_GET:
            return state.is_virtual(receiver)
        if func == _IS_CPU_GET:
            return not state.is_virtual(receiver)

        name = getattr(func, "__name__", "")
        if receiver is not None and name in ("to", "cuda", "cpu"):
            return self._move(func, name, receiver, args, kwargs)
        if receiver is not None and name == "is_pinned":
            return bool(state.pinned.get(receiver, False))
        if receiver is not None and name == "pin_memory":
            # The CPU wheel cannot pin; a clone stands in for the page-locked copy.
            out = receiver.clone()
            state.pinned[out] = True
            return out
        if receiver is not None and state.is_virtual(receiver):
            if name in HOST_READ_METHODS:
                state.record(ev.HOST_READ, f"Tensor.{name}")
            elif name == "__format__" and receiver.dim() != 0:
                # f"{t}" of a non-scalar falls back to str(t) *inside* this call, where the
                # mode is off; a 0-dim tensor formats through .item(), seen by dispatch.
                state.record(ev.HOST_READ, "Tensor.__format__")
            elif name == "numpy":
                if not kwargs.get("force", False):
                    # Same failure as on a GPU: the script would crash there too.
                    raise TypeError(
                        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
                    )
                state.record(ev.D2H_COPY, "Tensor.numpy(force=True)")
            elif name == "new_tensor" and len(args) > 1 and not state.is_virtual(args[1]):
                state.record(ev.H2D_BLOCKING, "Tensor.new_tensor")
                out = func(*args, **kwargs)
                state.tag_virtual(out)
                return out
            if name in PYTHON_READS:
                state.reads.append(name)
                try:
                    return func(*args, **kwargs)
                finally:
                    state.reads.pop()

        device = kwargs.get("device")
        if is_cuda_device(device):
            kwargs["device"] = "cpu"
            if name in HOST_DATA_FACTORIES and args and not state.is_virtual(args[0]):
                source = args[0]
                if isinstance(source, torch.Tensor):
                    state.record_host_to_device(source, bool(kwargs.get("non_blocking", False)), f"torch.{name}")
                else:
                    state.record(ev.H2D_BLOCKING, f"torch.{name}(host data, device=cuda)")
            out = func(*args, **kwargs)
            state.tag_virtual(out)
            return out
        return func(*args, **kwargs)

    def _move(self, func: Any, name: str, receiver: torch.Tensor, args: tuple, kwargs: dict) -> Any:
        state = self.state
        device, rest, non_blocking = _parse_move(
            name, args, kwargs, lambda t: VIRTUAL_DEVICE if state.is_virtual(t) else "cpu"
        )
        if device is None:  # dtype-only conversion: stays where it is
            return func(*args, **kwargs)
        was_virtual = state.is_virtual(receiver)
        if is_cuda_device(device):
            if was_virtual:
                return receiver.to(**rest)
            state.record_host_to_device(receiver, non_blocking, f"Tensor.{name}")
            out = receiver.to(**rest)
            if out is receiver:
                out = receiver.clone()  # a device move always makes a new tensor
            state.tag_virtual(out)
            return out
        if not was_virtual:
            return func(*args, **kwargs)
        if _called_from_torch():
            # torch internals group tensors by their *real* device (C++ helpers such as
            # _group_tensors_by_device_and_dtype return cpu) and then move results to it,
            # e.g. clip_grad_norm_. On a GPU that device is cuda: keep the tensor virtual.
            return receiver.to(**rest)
        # Device -> host. A non_blocking D2H does not block (it is unsafe to read, but that
        # is a different bug); a blocking one is a sync.
        if not non_blocking:
            state.record(ev.D2H_COPY, f"Tensor.{name}")
        out = receiver.to(**rest)
        if out is receiver:
            out = receiver.clone()
        state.untag_virtual(out)
        return out


class VirtualCudaDispatchMode(TorchDispatchMode):
    def __init__(self, state: VirtualCudaState) -> None:
        super().__init__()
        self.state = state

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        state = self.state
        name = func._schema.name
        leaves = pytree.tree_leaves((args, kwargs))
        touches_virtual = any(state.is_virtual(leaf) for leaf in leaves)

        if name == "aten::copy_":
            return self._copy(func, args, kwargs)

        if touches_virtual:
            kind = ev.SYNCING_OPS.get(name)
            if kind is not None and not (name == "aten::repeat_interleave" and kwargs.get("output_size") is not None):
                state.record(kind, name, line=state.read_line(leaves))
            elif name in ev.MASK_INDEX_OPS and _has_mask_index(args) and not _dispatches_to_masked_fill(state, name, args, kwargs):
                state.record(ev.DYNAMIC_SHAPE, f"{name} (bool mask)")

        out = func(*args, **kwargs)

        if state.read_lines and name in SAME_VALUE_OPS and isinstance(out, torch.Tensor):
            line = state.read_line(leaves)  # Lightning reads `cache.detach()` of what it stored
            if line is not None:
                state.read_lines[out] = line

        if touches_virtual or (state.device_allocations and not any(isinstance(x, torch.Tensor) for x in leaves)):
            if kind_returns_host_value(name):
                return out
            state.tag_virtual(out)
        else:
            track_host_provenance(state, leaves, out)
        return out

    def _copy(self, func: Any, args: tuple, kwargs: dict) -> Any:
        state = self.state
        destination, source = args[0], args[1]
        non_blocking = bool(args[2]) if len(args) > 2 else bool(kwargs.get("non_blocking", False))
        dst_virtual, src_virtual = state.is_virtual(destination), state.is_virtual(source)
        if dst_virtual and not src_virtual and isinstance(source, torch.Tensor):
            state.record_host_to_device(source, non_blocking, "aten::copy_")
        elif src_virtual and not dst_virtual and not non_blocking:
            state.record(ev.D2H_COPY, "aten::copy_")
        return func(*args, **kwargs)


def track_host_provenance(state: VirtualCudaState, leaves: list, out: Any) -> None:
    """After a host-only op: carry DataLoader origin and uint8->float normalisation forward.

    Shared with the cuda backend, which tracks the same provenance on real host tensors.
    """
    origin = None
    made_at = None
    from_uint8 = False
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            continue
        origin = origin or state.loader_origin.get(leaf)
        if leaf in state.host_normalized:
            made_at = state.host_normalized[leaf]
        elif leaf.dtype == torch.uint8:
            from_uint8 = True
    if origin is None and made_at is None and not from_uint8:
        return
    for result in pytree.tree_leaves(out):
        if not isinstance(result, torch.Tensor):
            continue
        if origin is not None:
            state.loader_origin[result] = origin
        if result.is_floating_point() and (made_at is not None or from_uint8):
            state.host_normalized[result] = made_at if made_at is not None else state.normalizing_line()


TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
# Parts of torch that are logging libraries, not device plumbing: their `.cpu()` is the real
# device-to-host read a logger makes (tensorboard's make_np: `.detach().cpu().numpy()`), and
# the tensor must come out on the host, or the `.numpy()` after it fails as it would on a GPU.
_TORCH_HOST_READERS = (os.path.join(TORCH_DIR, "utils", "tensorboard") + os.sep,)


def _called_from_torch() -> bool:
    # Frames: this helper, _move, __torch_function__, then the code that called .to()/.cpu().
    filename = sys._getframe(3).f_code.co_filename
    return filename.startswith(TORCH_DIR) and not filename.startswith(_TORCH_HOST_READERS)


def kind_returns_host_value(name: str) -> bool:
    # These return Python scalars / host tensors by design; tagging them would be wrong.
    return name in ("aten::_local_scalar_dense", "aten::equal")


def _has_mask_index(args: tuple) -> bool:
    indices = args[1] if len(args) > 1 else None
    if not isinstance(indices, (list, tuple)):
        return False
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices)


def _dispatches_to_masked_fill(state: VirtualCudaState, name: str, args: tuple, kwargs: dict) -> bool:
    """``t[mask] = 0.0``: an index_put of one bool mask (on the tensor's device) with a
    one-element host value runs as ``masked_fill_`` (ATen's canDispatchToMaskedFill), with no
    nonzero and no sync; seen on an H200 (docs/verification). A device value, a second index or
    ``accumulate=True`` takes the nonzero path."""
    if name == "aten::index":
        return False
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    value = args[2] if len(args) > 2 else kwargs.get("values")
    if accumulate or not isinstance(value, torch.Tensor) or value.numel() != 1 or state.is_virtual(value):
        return False
    target, indices = args[0], args[1]
    given = [index for index in indices if index is not None]
    return (
        len(given) == 1
        and isinstance(given[0], torch.Tensor)
        and given[0].dtype in (torch.bool, torch.uint8)
        and state.is_virtual(given[0]) == state.is_virtual(target)
    )
