#!/usr/bin/env bash
# npm run device-check: operon_cuda on an NVIDIA GPU host (H200 in mind), no Node needed.
# Builds libtritonserver.so, the test host and operon_cuda with g++/nvcc, runs the CUDA suite
# (every GPU output against the CPU references), the bench, and PyTorch on the same GPU, and
# Operon's NVML reader (the gateway's nv_gpu_* metrics) against the driver's libnvidia-ml.so.1;
# writes bench/results/gpu-<date>.md with the issue's three goals as PASS/FAIL lines
# (device-check-goals.py). Fails fast, saying why, without a GPU or nvcc. The whole run is capped at
# DEVICE_CHECK_BUDGET_S seconds (default 450, under 8 minutes): each step gets what is left, less what the
# steps after it are guaranteed, and a step with no time left is reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEADLINE=$((SECONDS + ${DEVICE_CHECK_BUDGET_S:-450}))
# budget CAP RESERVE: seconds for the next step: at most CAP, leaving RESERVE for the steps after it.
budget() { local left=$((DEADLINE - SECONDS - $2)); [ "$left" -gt "$1" ] && left=$1; [ "$left" -lt 0 ] && left=0; echo "$left"; }
# step NAME CAP RESERVE COMMAND...: runs COMMAND under its budget; prints its output; sets OUT_TEXT and RC.
step() {
  local name=$1 cap=$2 reserve=$3; shift 3
  local t; t=$(budget "$cap" "$reserve")
  if [ "$t" -lt 5 ]; then OUT_TEXT="skipped: the device check's ${DEVICE_CHECK_BUDGET_S:-450} s budget is spent"; RC=124
  else OUT_TEXT=$(timeout "$t" "$@" 2>&1); RC=$?; [ $RC -eq 124 ] && OUT_TEXT="$OUT_TEXT
(stopped after its $t s budget)"; fi
  echo "== $name (exit $RC)"; echo "$OUT_TEXT"
}
# DEVICE_CHECK_BUILD_ONLY=1: build and run the suite's CPU half only (for hosts without a GPU), and the NVML
# reader against the fake library (native/test-fixtures/fake-nvml.cc).
[ "${DEVICE_CHECK_BUILD_ONLY:-0}" = 1 ] || command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || [ "${DEVICE_CHECK_BUILD_ONLY:-0}" = 1 ] || { echo "device-check: no NVIDIA GPU here (nvidia-smi -L failed); run it on a GPU host" >&2; exit 1; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "device-check: nvcc not found (set NVCC)" >&2; exit 1; }
CUDA=${CUDA_HOME:-/usr/local/cuda}
OUT=$ROOT/native/build/device-check
mkdir -p "$OUT/lib" "$OUT/bin" "$OUT/backends/operon_cuda" "$OUT/backends/operon_image_preprocess" "$OUT/obj"
I="-I $ROOT/native/tritonserver/include"
S=$ROOT/native/tritonserver/src
CX="g++ -std=c++17 -O2 -Wall -fPIC -fvisibility=hidden $I"
echo "== build ($($NVCC --version | tail -1))"
pids=()
for f in "$S"/*.cc; do $CX -c "$f" -o "$OUT/obj/$(basename "$f").o" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
$CX -shared -Wl,-soname,libtritonserver.so -Wl,--version-script="$ROOT/native/tritonserver/exports.map" "$OUT"/obj/*.cc.o -o "$OUT/lib/libtritonserver.so" -ldl -lpthread
C=$ROOT/native/backends/operon_cuda
$NVCC -std=c++17 -O3 -fmad=false -Xcompiler -fPIC,-fvisibility=hidden $I -I "$S" -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -c "$C/cuda-kernels.cu" -o "$OUT/obj/k.o" &
$NVCC -std=c++17 -O3 -fmad=false -Xcompiler -fPIC,-fvisibility=hidden $I -I "$S" -gencode arch=compute_90,code=sm_90 -c "$C/operon-cuda.cu" -o "$OUT/obj/b.o" &
$CX -O3 -ffp-contract=off -c "$C/cuda-reference.cc" -o "$OUT/obj/r.o" &
$CX -O2 -c "$C/cuda-refusal.cc" -o "$OUT/obj/h.o" &
wait
g++ -shared "$OUT/obj/k.o" "$OUT/obj/b.o" "$OUT/obj/r.o" "$OUT/obj/h.o" -o "$OUT/backends/operon_cuda/libtriton_operon_cuda.so" -Wl,-rpath,'$ORIGIN/../../lib' -L "$OUT/lib" -ltritonserver -L "$CUDA/lib64" -lcudart_static -lrt -ldl -lpthread
$CX -O3 -ffp-contract=off -I "$S" -shared "$ROOT/native/backends/operon_image_preprocess/"*.cc -o "$OUT/backends/operon_image_preprocess/libtriton_operon_image_preprocess.so" -Wl,-rpath,'$ORIGIN/../../lib' -L "$OUT/lib" -ltritonserver -lpthread
g++ -std=c++17 -O2 $I -I "$C" -I "$ROOT/native/src" "$ROOT"/native/tritonserver/test/*.cc "$C/cuda-reference.cc" "$C/cuda-refusal.cc" -o "$OUT/bin/operon-backend-host" -Wl,-rpath,'$ORIGIN/../lib' -L "$OUT/lib" -ltritonserver -lpthread -ldl
HOST=$OUT/bin/operon-backend-host
if [ "${DEVICE_CHECK_BUILD_ONLY:-0}" = 1 ]; then
  g++ -shared -fPIC -O1 "$ROOT/native/test-fixtures/fake-nvml.cc" -o "$OUT/lib/fake-libnvidia-ml.so.1"
  "$HOST" nvml-check "$OUT/lib/fake-libnvidia-ml.so.1"
  exec "$HOST" cuda-selftest "$OUT" --cpu-only
fi
DATE=$(date -u +%Y-%m-%d)
REPORT=$ROOT/bench/results/gpu-$DATE.md
mkdir -p "$(dirname "$REPORT")"
set +e
# Budgets (cap, reserve for the steps after): 150 + 150 + 90 + 20 s at most, within what the build left.
step "CUDA suite" 150 130 "$HOST" cuda-selftest "$OUT"; SUITE=$OUT_TEXT; SUITE_RC=$RC
step "bench" 150 70 "$HOST" cuda-bench "$OUT"; BENCH=$OUT_TEXT; BENCH_RC=$RC
step "PyTorch" 90 15 python3 "$ROOT/native/scripts/device-check-torch.py"; TORCH=$OUT_TEXT; TORCH_RC=$RC
step "NVML (the gateway's GPU metrics reader)" 20 0 "$HOST" nvml-check libnvidia-ml.so.1; NVML=$OUT_TEXT; NVML_RC=$RC
GOALS=$(python3 "$ROOT/native/scripts/device-check-goals.py" <(echo "$BENCH") <(echo "$TORCH") 2>&1); GOALS_RC=$?
echo "== goals"; echo "$GOALS"
set -e
{
  echo "# operon_cuda on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $DATE"
  echo
  echo "Written by \`npm run device-check\` (native/scripts/device-check.sh) in $SECONDS s. Driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1); $($NVCC --version | tail -1)."
  echo
  echo "## Goals (issue 19)"; echo; echo "$GOALS"; echo
  echo "## CUDA suite (exit $SUITE_RC)"; echo; echo '```'; echo "$SUITE"; echo '```'; echo
  echo "$BENCH"; echo; echo "(bench exit $BENCH_RC)"; echo
  echo "## PyTorch on the same GPU (exit $TORCH_RC)"; echo; echo "$TORCH"; echo
  echo "## NVML reader, nv_gpu_* metrics (exit $NVML_RC)"; echo; echo '```'; echo "$NVML"; echo '```'
} > "$REPORT"
echo "== wrote $REPORT"
# Exit status: the suite, bench and NVML checks ran clean (the goals' PASS/FAIL lines are figures, not failures).
[ $SUITE_RC -eq 0 ] && [ $BENCH_RC -eq 0 ] && [ $NVML_RC -eq 0 ] && [ $GOALS_RC -eq 0 ]
