#!/usr/bin/env bash
# The cuda backend of `verify` on the bundled fixtures, on one GPU machine, in a bounded time.
#
#   OUT=/tmp/gpu bash benchmarks/verify_gpu.sh          # from the repository root
#
# What it runs (everything lands under $OUT/r, packed into $OUT/results.tar.gz):
#   1. the environment (nvidia-smi, torch, CUDA runtime, torchmetrics);
#   2. tests/test_verify_cli.py::test_cuda_backend_confirms_the_markers_on_a_gpu;
#   3. the confirmation pass: `verify fixtures/ --backend cuda --scale medium` in $SHARDS
#      shards side by side (sync callbacks and profiler counts are per process, so shards do not
#      change what is confirmed; host time blocked in syncs is measured under that load);
#      beside it, benchmarks/gpu_probes/*.py: labels no fixture exercises;
#   4. the A/B cost (`--measure`), one script at a time, nothing else on the GPU, in the order
#      of $MEASURE (scripts with one finding first: their cost belongs to that finding),
#      starting no script after $MEASURE_UNTIL seconds.
# A wheel folder .whl/ (libcst for the machine's Python) is installed into /tmp/site first;
# the repository root goes on PYTHONPATH, so nothing is installed into the machine's Python.
set -u
OUT=${OUT:-/tmp/verify-gpu}
R="$OUT/r"
mkdir -p "$R"
START=$(date +%s)
SHARDS=${SHARDS:-4}
MEASURE_UNTIL=${MEASURE_UNTIL:-430}  # start no A/B after this many seconds
END=${END:-560}  # and end every A/B by then
REPEATS=${REPEATS:-3}
PY=${PY:-python3}
BACKEND=${BACKEND:-cuda}  # emulate: a dry run of this script on a machine without a GPU
export PYTHONUNBUFFERED=1 WANDB_MODE=offline
if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
elapsed() { echo $(($(date +%s) - START)); }

{ nvidia-smi || true; "$PY" -c '
import sys, torch, torchmetrics
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda runtime", torch.version.cuda,
      "torchmetrics", torchmetrics.__version__)
print("device", torch.cuda.get_device_name() if torch.cuda.is_available() else None)'; } >"$R/environment.txt" 2>&1

# The fixtures the verifier replays (the pragma), wandb ones only where wandb imports.
mapfile -t SCRIPTS < <(grep -l "^# torchsync-fixture:" fixtures/*/*.py | grep -v '\.fixed\.py$' | sort)

timeout 240 "$PY" -m pytest -q -p no:cacheprovider \
    "tests/test_verify_cli.py::test_cuda_backend_confirms_the_markers_on_a_gpu" >"$R/pytest_gpu.txt" 2>&1 &
PYTEST=$!

pids=()
for ((i = 0; i < SHARDS; i++)); do
    shard=()
    for ((j = i; j < ${#SCRIPTS[@]}; j += SHARDS)); do shard+=("${SCRIPTS[j]}"); done
    timeout $((END - 30)) "$PY" -m torchsync_lint verify "${shard[@]}" --backend "$BACKEND" --scale medium --timeout 120 \
        --format markdown --output-file "$R/confirm_$i.md" --json-output "$R/confirm_$i.json" \
        --trace-dir "/tmp/traces_$i" >"$R/confirm_$i.log" 2>&1 &
    pids+=($!)
done
# Probes of the cuda backend's labels that no fixture exercises (benchmarks/gpu_probes/).
timeout $((END - 30)) "$PY" -m torchsync_lint verify benchmarks/gpu_probes/*.py --backend "$BACKEND" --timeout 120 \
    --format markdown --output-file "$R/probes.md" --json-output "$R/probes.json" \
    --trace-dir /tmp/traces_probes >"$R/probes.log" 2>&1 &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; echo "confirm shard pid $p exit $?" >>"$R/phases.txt"; done
wait "$PYTEST"; echo "pytest exit $? at $(elapsed) s" >>"$R/phases.txt"
echo "confirmation pass done at $(elapsed) s" >>"$R/phases.txt"
# One profiler trace per shard's first script comes back, as a sample of what the profiler saw.
for ((i = 0; i < SHARDS; i++)); do
    t=$(ls /tmp/traces_$i/*.trace.json 2>/dev/null | head -1)
    [ -n "$t" ] && gzip -c "$t" >"$R/sample_trace_$i.json.gz"
done

MEASURE=${MEASURE:-"fixtures/metrics/naive.py fixtures/metrics/gpu_step_time_scalar.py
fixtures/metrics/explicit_weight.py fixtures/input_pipeline/pipeline_pinned.py
fixtures/metrics/macro_bincount.py fixtures/logging/tqdm_postfix.py fixtures/logging/accelerate_log.py
fixtures/host_sync/item_accumulate.py fixtures/input_pipeline/pipeline_workers.py
fixtures/input_pipeline/pipeline_baseline.py fixtures/metrics/module_attrs.py"}
[ "$BACKEND" = cuda ] || MEASURE=""
for f in $MEASURE; do
    if [ "$(elapsed)" -ge "$MEASURE_UNTIL" ]; then echo "not measured (time): $f" >>"$R/phases.txt"; continue; fi
    name=$(basename "$f" .py)
    timeout $((END - $(elapsed))) "$PY" -m torchsync_lint verify "$f" --backend cuda --scale medium --measure --repeats "$REPEATS" \
        --timeout 60 --format markdown --output-file "$R/measure_$name.md" --json-output "$R/measure_$name.json" \
        --trace-dir "/tmp/traces_m" >"$R/measure_$name.log" 2>&1
    echo "measure $f exit $? at $(elapsed) s" >>"$R/phases.txt"
done
tar -czf "$OUT/results.tar.gz" -C "$OUT" r
echo "done at $(elapsed) s"
cat "$R/phases.txt"
