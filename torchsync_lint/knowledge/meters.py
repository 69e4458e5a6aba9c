"""Library objects that keep what their methods are given, so a field read later holds it
(`meter.update(grad_norm)`, then `f"{meter.val:.4f}"` formats the device tensor).

Read from timm 1.0 (`timm/utils/metrics.py`): `AverageMeter.update(val, n=1)` stores
`self.val = val`, `self.sum += val * n`, `self.avg = self.sum / self.count`.

Maker qualname -> {field: (method, position of the argument it keeps, after `self`)}.
"""

from __future__ import annotations

_AVERAGE_METER = {"val": ("update", 0), "sum": ("update", 0), "avg": ("update", 0)}

STORED_FIELDS: dict[str, dict[str, tuple[str, int]]] = {
    "timm.utils.AverageMeter": _AVERAGE_METER,
    "timm.utils.metrics.AverageMeter": _AVERAGE_METER,
}
