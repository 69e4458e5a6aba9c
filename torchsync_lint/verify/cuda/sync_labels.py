"""Label a real GPU synchronisation with an evidence kind (plain Python, no torch).

The GPU-trace callbacks say *that* the host waited (stream, device or event sync) and the
Python stack says *where*; the op the dispatch mode was executing at that moment says
*why*. For example a stream sync during ``aten::_local_scalar_dense`` is a scalar read, and
during ``aten::_to_copy`` from cpu to cuda a blocking host-to-device copy.
"""

from __future__ import annotations

from torchsync_lint.verify import evidence as ev

STREAM = "stream"
DEVICE = "device"
EVENT = "event"

_OP_KINDS = {
    **ev.SYNCING_OPS,
    "aten::is_nonzero": ev.SCALAR_READ,
    "aten::item": ev.SCALAR_READ,
    "aten::allclose": ev.SCALAR_READ,  # returns a Python bool read from the device
    # a sync inside a mask index is its nonzero (the functional `aten::index_put` is not listed)
    **dict.fromkeys(ev.MASK_INDEX_OPS - {"aten::index_put"}, ev.DYNAMIC_SHAPE),
}
_COPY_OPS = frozenset({"aten::_to_copy", "aten::copy_", "aten::to", "aten::lift_fresh", "aten::_copy_from"})
# Python calls that copy host data into a new device tensor inside C++, with no op dispatched
# (the cuda harness's FactoryLabels names them while they run).
_FACTORY_PREFIX = "factory:"


def copies_host_data_to_cuda(name: str, args: tuple, kwargs: dict, factories, is_cuda_device) -> bool:
    """Does the factory call ``name`` (one of ``factories``, or ``Tensor.new_tensor``) put its
    data on a CUDA device: ``device=`` names one, or, for ``new_tensor`` without a device,
    the tensor it is called on is on one (the new tensor takes its device)."""
    if name == "new_tensor":
        if kwargs.get("device") is not None:
            return is_cuda_device(kwargs["device"])
        return bool(args) and getattr(args[0], "is_cuda", False) is True
    return name in factories and is_cuda_device(kwargs.get("device"))


def factory_label(name: str) -> str:
    """The label of ``torch.<name>(host data, device=cuda)`` (``Tensor.new_tensor`` too)."""
    return f"{_FACTORY_PREFIX}{'Tensor' if name == 'new_tensor' else 'torch'}.{name}"


# Frames between a sync and the code that caused it which say nothing about the cause:
# torch._utils.CallbackRegistry.fire_callbacks runs the GPU-trace callbacks.
_PLUMBING_FUNCTIONS = frozenset({"fire_callbacks"})


def innermost_torch_function(stack: list[tuple[str, str]], torch_dir: str) -> str | None:
    """Name of the innermost function defined inside torch on ``stack`` (innermost first,
    as ``(filename, function name)``), skipping the GPU-trace plumbing. For
    ``torch.cuda.Stream.synchronize()`` this is ``synchronize``."""
    for filename, function in stack:
        if not filename.startswith(torch_dir) or function in _PLUMBING_FUNCTIONS or filename.endswith("_gpu_trace.py"):
            continue
        return function
    return None


def classify_sync(
    source: str, op: str | None, copy_direction: str | None = None, python_callee: str | None = None
) -> tuple[str, str]:
    """(evidence kind, op label) for one sync callback.

    ``op``: innermost aten op running when the sync fired (None outside any op);
    ``copy_direction``: "h2d"/"d2h" for copy ops; ``python_callee``: name of the innermost
    torch function on the Python stack (``synchronize`` for ``Stream.synchronize()``).
    """
    if source in (DEVICE, EVENT):
        return ev.EXPLICIT_SYNC, {"device": "cudaDeviceSynchronize", "event": "cudaEventSynchronize"}[source]
    if op is None:
        if python_callee == "synchronize":
            return ev.EXPLICIT_SYNC, "Stream.synchronize"
        return ev.DEVICE_SYNC, "cudaStreamSynchronize"
    if op.startswith(_FACTORY_PREFIX):
        return ev.H2D_BLOCKING, op[len(_FACTORY_PREFIX) :] + "(host data, device=cuda)"
    if op in _COPY_OPS:
        if copy_direction == "h2d":
            return ev.H2D_BLOCKING, op
        return ev.D2H_COPY, op
    return _OP_KINDS.get(op, ev.DEVICE_SYNC), op


class SyncSignalPairing:
    """One event per real sync from the two signals torch gives for it.

    c10/cuda/CUDAFunctions.h's ``memcpy_and_sync`` and ``stream_synchronize`` (every scalar
    read, blocking copy, nonzero, ``Stream.synchronize()``) call ``warn_or_error_on_sync()``
    and then fire the GPU-trace stream-sync callback: one sync, two signals. The callback
    reaches Python at once; the warning is buffered by torch's warning handler until the op
    returns to Python, so it usually comes second, but a pairing must not depend on the order.
    Device and event syncs fire only the callback. Recording both signals would count every
    scalar read twice.

    ``callback()``/``warning()`` return whether to record an event: the first signal of a
    sync records it, the second pairs with it. The counts go into the harness record as a
    cross-check: stream callbacks and warnings should pair up, and what does not shows a
    sync one mechanism missed.
    """

    def __init__(self) -> None:
        self.counts = {STREAM: 0, DEVICE: 0, EVENT: 0, "debug_mode_warning": 0}
        self.unpaired_callbacks = 0
        self.unpaired_warnings = 0

    def callback(self, source: str) -> bool:
        self.counts[source] += 1
        if source != STREAM:
            return True
        if self.unpaired_warnings:
            self.unpaired_warnings -= 1
            return False
        self.unpaired_callbacks += 1
        return True

    def warning(self) -> bool:
        self.counts["debug_mode_warning"] += 1
        if self.unpaired_callbacks:
            self.unpaired_callbacks -= 1
            return False
        self.unpaired_warnings += 1
        return True

    def to_json(self) -> dict:
        return {**self.counts, "unpaired_callbacks": self.unpaired_callbacks, "unpaired_warnings": self.unpaired_warnings}
