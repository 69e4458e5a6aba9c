"""Runtime evidence: what a backend records, and which rule codes each kind can confirm.

This module is plain Python (no torch) so the matching and reporting logic can be
imported and tested anywhere.

Evidence kind -> rule codes it confirms (the same table is in docs/verification/README.md):

| kind                    | emulate backend (CPU) sees                                   | cuda backend sees                                   | confirms |
|-------------------------|--------------------------------------------------------------|-----------------------------------------------------|----------|
| scalar-read             | aten::_local_scalar_dense / aten::equal on a virtual-cuda input | stream-sync callback / sync-debug warning        | TSL101 TSL102 TSL103 TSL106 TSL201 TSL204 |
| host-read               | Tensor.tolist/numpy/__repr__/__str__/__array__ of a virtual-cuda tensor | stream-sync callback                     | TSL101 TSL103 TSL106 TSL204 |
| d2h-copy                | Tensor.cpu()/.to("cpu") of a virtual-cuda tensor (tensorboard's make_np too) | stream-sync callback (Memcpy DtoH)   | TSL101 TSL103 TSL106 TSL204 |
| dynamic-shape           | nonzero, masked_select, unique*, repeat_interleave w/o output_size, bool-mask index/index_put_ | stream-sync callback | TSL105 TSL204 |
| bincount                | aten::bincount / aten::histc on a virtual-cuda input         | stream-sync callback inside bincount                | TSL206 TSL204 |
| h2d-blocking            | untagged -> cuda move without non_blocking; torch.tensor/as_tensor(host data, device=cuda); cuda.copy_(host) | stream-sync callback (Memcpy HtoD) | TSL301 TSL305 TSL202 TSL203 |
| h2d-pageable            | non_blocking=True H2D of a tensor that is not (virtually) pinned | dispatch log: _to_copy non_blocking, src not pinned | TSL302 |
| dataloader-unpinned     | a batch of a DataLoader(pin_memory=False) copied to cuda (at the DataLoader line) | same (harness patch)           | TSL302 |
| dataloader-main-process | DataLoader.__iter__ with the user's num_workers == 0 (at the DataLoader line) | same (harness patch)                | TSL303 |
| host-normalized-h2d     | a float tensor derived from uint8 on the host, copied H2D (at the copy line and the line that made the float) | same | TSL304 |
| explicit-sync           | torch.cuda.synchronize, Stream/Event.synchronize             | device/event-sync callback                          | TSL104 |
| distributed-sync        | a sync inside torchmetrics' cross-rank state gather (Metric._sync_dist); dist.barrier and the *_object collectives of a script that asked for NCCL | (not labelled yet) | TSL204 |
| emulated                | not evidence: a note that the emulation differs from a GPU run at that line (torch.compile ran eagerly) | - | - |
"""

from __future__ import annotations

from dataclasses import dataclass

SCALAR_READ = "scalar-read"
HOST_READ = "host-read"
D2H_COPY = "d2h-copy"
DYNAMIC_SHAPE = "dynamic-shape"
BINCOUNT = "bincount"
H2D_BLOCKING = "h2d-blocking"
H2D_PAGEABLE = "h2d-pageable"
DATALOADER_UNPINNED = "dataloader-unpinned"
DATALOADER_MAIN_PROCESS = "dataloader-main-process"
HOST_NORMALIZED_H2D = "host-normalized-h2d"
EXPLICIT_SYNC = "explicit-sync"
# Only the cuda backend produces this one: a sync the GPU trace saw that no op label explains.
DEVICE_SYNC = "device-sync"
# A host sync made while ranks exchange state (an NCCL barrier, a metric's gather of its
# states in compute()). Kept apart so a gather every N steps reads as gated, not as a leak.
DISTRIBUTED_SYNC = "distributed-sync"
# Not evidence: the emulator ran something differently from a GPU (torch.compile -> eager).
EMULATED = "emulated"

CONFIRMS: dict[str, frozenset[str]] = {
    # TSL106: a logging library reads the tensor with one of these three (.item(), str(), .cpu()).
    SCALAR_READ: frozenset({"TSL101", "TSL102", "TSL103", "TSL106", "TSL201", "TSL204"}),
    HOST_READ: frozenset({"TSL101", "TSL103", "TSL106", "TSL204"}),
    D2H_COPY: frozenset({"TSL101", "TSL103", "TSL106", "TSL204"}),
    DYNAMIC_SHAPE: frozenset({"TSL105", "TSL204"}),
    BINCOUNT: frozenset({"TSL206", "TSL204"}),
    H2D_BLOCKING: frozenset({"TSL301", "TSL305", "TSL202", "TSL203"}),
    H2D_PAGEABLE: frozenset({"TSL302"}),
    DATALOADER_UNPINNED: frozenset({"TSL302"}),
    DATALOADER_MAIN_PROCESS: frozenset({"TSL303"}),
    HOST_NORMALIZED_H2D: frozenset({"TSL304"}),
    EXPLICIT_SYNC: frozenset({"TSL104"}),
    DISTRIBUTED_SYNC: frozenset({"TSL204"}),
    # An unlabelled GPU sync proves *a* host sync happened at the line; it confirms the
    # host-read family but not copy/pipeline hazards, whose evidence is more specific.
    DEVICE_SYNC: frozenset({"TSL101", "TSL102", "TSL103", "TSL104", "TSL105", "TSL106", "TSL201", "TSL204", "TSL206"}),
}

# Kinds that stall the host on the device. A clean fixture must show none of these in its
# steady-state steps. The pipeline kinds (DataLoader settings, host normalisation) are hazards
# that cost throughput but are not synchronisations, so they are reported but never fail a
# clean fixture on their own (a blocking copy of the same batch is reported as h2d-blocking).
SYNC_KINDS = frozenset(
    {SCALAR_READ, HOST_READ, D2H_COPY, DYNAMIC_SHAPE, BINCOUNT, H2D_BLOCKING, H2D_PAGEABLE, EXPLICIT_SYNC, DEVICE_SYNC, DISTRIBUTED_SYNC}
)


# aten op -> evidence kind, for ops whose CUDA kernel needs a value on the host. The emulator
# uses these tables to decide that an op *would* sync; the cuda backend to label a sync it saw.
SYNCING_OPS: dict[str, str] = {
    "aten::_local_scalar_dense": SCALAR_READ,  # .item(), float(), bool(), if t:, f"{t:.3f}"
    "aten::equal": SCALAR_READ,  # torch.equal returns a Python bool
    "aten::nonzero": DYNAMIC_SHAPE,  # also one-arg torch.where
    "aten::masked_select": DYNAMIC_SHAPE,
    "aten::_unique": DYNAMIC_SHAPE,
    "aten::_unique2": DYNAMIC_SHAPE,
    "aten::unique_dim": DYNAMIC_SHAPE,
    "aten::unique_consecutive": DYNAMIC_SHAPE,
    "aten::unique_dim_consecutive": DYNAMIC_SHAPE,
    "aten::repeat_interleave": DYNAMIC_SHAPE,  # only without output_size (the emulator checks)
    "aten::bincount": BINCOUNT,  # CUDA impl reads min()/max() back to the host
    "aten::histc": BINCOUNT,
}
# Index ops that sync only with a bool/uint8 mask (the nonzero runs inside the kernel).
MASK_INDEX_OPS = frozenset({"aten::index", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_"})


def codes_confirmed_by(kind: str) -> frozenset[str]:
    return CONFIRMS.get(kind, frozenset())


@dataclass(frozen=True)
class RuntimeEvent:
    """One recorded occurrence of a would-sync (or pipeline hazard) at a line of the user's script.

    ``step`` is the 0-based index of the training step the event happened in, or None when the
    run had no step clock (see steady_state.py). ``line`` is 0 when no frame of the user's file
    was on the stack (e.g. a sync in a library called from a thread).
    """

    line: int
    kind: str
    op: str
    step: int | None

    @classmethod
    def from_json(cls, data: dict) -> "RuntimeEvent":
        return cls(line=int(data["line"]), kind=str(data["kind"]), op=str(data["op"]), step=data.get("step"))
