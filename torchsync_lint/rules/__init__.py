"""Rule families. Importing this package registers every rule (see ``rule.registry``).

- ``host_sync``, ``host_sync_ops``, ``host_sync_sinks``: TSL1xx, host syncs in hot loops
- ``metrics``: TSL2xx, torchmetrics collection
- ``input_pipeline``: TSL3xx, the data pipeline
"""

import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
