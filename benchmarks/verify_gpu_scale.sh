#!/usr/bin/env bash
# What each finding of fixtures/scale/ costs on one GPU machine, in well under 10 minutes.
#
#   OUT=/tmp/gpu-scale bash benchmarks/verify_gpu_scale.sh             # a GPU, from the repository root
#   BACKEND=emulate OUT=/tmp/scale bash benchmarks/verify_gpu_scale.sh  # a dry run on any machine (CPU times)
#
# One command: benchmarks/verify_scale.py runs `verify fixtures/scale/ --measure` (each finding
# confirmed at its line, then the original, the whole fix and each fix applied alone timed in
# $REPEATS alternating fresh runs, median and spread) and writes
# $DOCS/<device>-scale.{md,json} (docs/verification/cuda-h200-scale.md on an H200). The results
# and the environment are also packed into $OUT/results.tar.gz. Budget on a GPU, estimated (it
# has not run on one yet): 3 scripts x (attribution, profile, fixed attribution) + 10 timed
# variants x 5 runs, ~60 fresh processes of ~5-6 s each at --scale large: about 6 minutes.
# $END bounds it (a run cut there writes no page: lower REPEATS or STEPS first).
# A wheel folder .whl/ (libcst for the machine's Python) is installed into /tmp/site first; the
# repository root goes on PYTHONPATH, so nothing is installed into the machine's Python.
set -u
OUT=${OUT:-/tmp/verify-gpu-scale}
BACKEND=${BACKEND:-cuda}
REPEATS=${REPEATS:-5}
END=${END:-540}  # seconds: the whole run ends by then
PY=${PY:-python3}
if [ "$BACKEND" = cuda ]; then SCALE=${SCALE:-large}; DOCS=${DOCS:-docs/verification}; else SCALE=${SCALE:-small}; DOCS=${DOCS:-$OUT/r}; fi
R="$OUT/r"
mkdir -p "$R" "$DOCS"
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
START=$(date +%s)
{ nvidia-smi || true; "$PY" -c '
import sys, torch, torchmetrics
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda runtime", torch.version.cuda,
      "torchmetrics", torchmetrics.__version__)
print("device", torch.cuda.get_device_name() if torch.cuda.is_available() else None)'; } >"$R/environment.txt" 2>&1

STEPS_ARG=()
[ -n "${STEPS:-}" ] && STEPS_ARG=(--steps "$STEPS")
# SCRIPTS: a subset of fixtures/scale/ (space-separated; default all of them).
read -r -a SCRIPT_ARGS <<<"${SCRIPTS:-}"
timeout "$END" "$PY" benchmarks/verify_scale.py --backend "$BACKEND" --scale "$SCALE" --repeats "$REPEATS" \
    "${STEPS_ARG[@]}" --output-dir "$DOCS" --trace-dir /tmp/traces_scale "${SCRIPT_ARGS[@]}" >"$R/verify_scale.log" 2>&1
STATUS=$?
echo "verify_scale exit $STATUS at $(($(date +%s) - START)) s" | tee -a "$R/phases.txt"
cp "$DOCS"/*-scale.md "$DOCS"/*-scale.json "$R/" 2>/dev/null
tar -czf "$OUT/results.tar.gz" -C "$OUT" r
exit "$STATUS"
