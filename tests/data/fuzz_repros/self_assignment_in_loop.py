# fuzz-repro: status=fixed
# Found by scripts/fuzz_fix.py (seed 1, programs p1_01290 and p1_02000: a helper inlined into
# its caller's loop left `device = device` there). On the analysis of commit 1d94b36,
# `_device_arg` followed the name's own binding through the loop's back edge without a cycle
# guard: RecursionError, reported as TSL903 for TSL101, TSL103, TSL301, TSL302, TSL303 and
# TSL304. The analysis rewrite merged in e356b88 no longer recurses; kept as a regression test.
import torch

device = "cuda"
for batch in loader:
    device = device
    batch.to(device)
