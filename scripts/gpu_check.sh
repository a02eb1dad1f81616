#!/usr/bin/env bash
# One prepared GPU check for ember's cuda backend (docs/cuda.md).  Run from the repository root on a machine
# with an NVIDIA GPU:  bash scripts/gpu_check.sh        (DRY_RUN=1 prints the steps without running them)
# Logs go to $OUT (if set) or ./gpu_check_logs.  Budget: under 8 minutes in all.
set -u
LOG_DIR="${OUT:-$PWD/gpu_check_logs}"
mkdir -p "$LOG_DIR"
PY="${PYTHON:-python}"
run() {  # run NAME SECONDS COMMAND...: time-limited, logged, never aborts the script
  local name="$1" limit="$2"; shift 2
  echo "== $name (limit ${limit}s): $*" | tee -a "$LOG_DIR/summary.txt"
  if [ "${DRY_RUN:-0}" = "1" ]; then return 0; fi
  timeout "$limit" "$@" >"$LOG_DIR/$name.log" 2>&1
  local rc=$?
  echo "   -> rc=$rc (log: $LOG_DIR/$name.log)" | tee -a "$LOG_DIR/summary.txt"
  tail -3 "$LOG_DIR/$name.log" | sed 's/^/   /' | tee -a "$LOG_DIR/summary.txt"
}
: >"$LOG_DIR/summary.txt"
run nvidia_smi 20 nvidia-smi
# 1. CuPy (the cuda12 extra) if missing
if ! "$PY" -c "import cupy" >/dev/null 2>&1; then
  run install_cupy 120 "$PY" -m pip install --quiet "cupy-cuda12x>=13"
fi
run cupy_info 30 "$PY" -c "import cupy, ember; print(cupy.__version__, cupy.cuda.runtime.getDeviceCount()); \
print('ember sees cuda:', ember.cuda.is_available(), ember.cuda.get_device_name())"
# 2. GPU tests (pytest -m gpu) and the op database on the real device vs the CPU
run gpu_tests 60 "$PY" -m pytest -q -m gpu tests/cuda -p no:cacheprovider
run opdb_real_cuda 120 "$PY" -m pytest -q tests/cuda/test_emulated_opdb.py -k real -p no:cacheprovider --maxfail=50
# 3. benchmarks: ember-on-cupy vs torch-cuda where torch has CUDA
run bench_cuda 100 "$PY" bench/cuda.py
echo "done: $LOG_DIR/summary.txt"
