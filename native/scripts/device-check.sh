#!/usr/bin/env bash
# npm run device-check: operon_cuda on an NVIDIA GPU host (H200 in mind), no Node needed.
# Builds libtritonserver.so, the test host and operon_cuda with g++/nvcc, runs the CUDA suite
# (every GPU output against the CPU references), the bench, and PyTorch on the same GPU, and
# Operon's NVML reader (the gateway's nv_gpu_* metrics) against the driver's libnvidia-ml.so.1;
# writes bench/results/gpu-<date>.md. Fails fast, saying why, without a GPU or nvcc.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
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
wait
g++ -shared "$OUT/obj/k.o" "$OUT/obj/b.o" "$OUT/obj/r.o" -o "$OUT/backends/operon_cuda/libtriton_operon_cuda.so" -Wl,-rpath,'$ORIGIN/../../lib' -L "$OUT/lib" -ltritonserver -L "$CUDA/lib64" -lcudart_static -lrt -ldl -lpthread
$CX -O3 -ffp-contract=off -I "$S" -shared "$ROOT/native/backends/operon_image_preprocess/"*.cc -o "$OUT/backends/operon_image_preprocess/libtriton_operon_image_preprocess.so" -Wl,-rpath,'$ORIGIN/../../lib' -L "$OUT/lib" -ltritonserver -lpthread
g++ -std=c++17 -O2 $I -I "$C" -I "$ROOT/native/src" "$ROOT"/native/tritonserver/test/*.cc "$C/cuda-reference.cc" -o "$OUT/bin/operon-backend-host" -Wl,-rpath,'$ORIGIN/../lib' -L "$OUT/lib" -ltritonserver -lpthread -ldl
HOST=$OUT/bin/operon-backend-host
if [ "${DEVICE_CHECK_BUILD_ONLY:-0}" = 1 ]; then
  g++ -shared -fPIC -O1 "$ROOT/native/test-fixtures/fake-nvml.cc" -o "$OUT/lib/fake-libnvidia-ml.so.1"
  "$HOST" nvml-check "$OUT/lib/fake-libnvidia-ml.so.1"
  exec "$HOST" cuda-selftest "$OUT" --cpu-only
fi
DATE=$(date -u +%Y-%m-%d)
REPORT=$ROOT/bench/results/gpu-$DATE.md
mkdir -p "$(dirname "$REPORT")"
echo "== CUDA suite"
set +e
SUITE=$(timeout 240 "$HOST" cuda-selftest "$OUT" 2>&1); SUITE_RC=$?
echo "$SUITE"
echo "== bench"
BENCH=$(timeout 180 "$HOST" cuda-bench "$OUT" 2>&1); BENCH_RC=$?
echo "$BENCH"
echo "== NVML (the gateway's GPU metrics reader)"
NVML=$(timeout 60 "$HOST" nvml-check libnvidia-ml.so.1 2>&1); NVML_RC=$?
echo "$NVML"
echo "== PyTorch"
TORCH=$(timeout 120 python3 "$ROOT/native/scripts/device-check-torch.py" 2>&1); TORCH_RC=$?
echo "$TORCH"
set -e
{
  echo "# operon_cuda on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $DATE"
  echo
  echo "Written by \`npm run device-check\` (native/scripts/device-check.sh). Driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1); $($NVCC --version | tail -1)."
  echo
  echo "## CUDA suite (exit $SUITE_RC)"; echo; echo '```'; echo "$SUITE"; echo '```'; echo
  echo "$BENCH"; echo; echo "(bench exit $BENCH_RC)"; echo
  echo "## PyTorch on the same GPU (exit $TORCH_RC)"; echo; echo "$TORCH"; echo
  echo "## NVML reader, nv_gpu_* metrics (exit $NVML_RC)"; echo; echo '```'; echo "$NVML"; echo '```'
} > "$REPORT"
echo "== wrote $REPORT"
[ $SUITE_RC -eq 0 ] && [ $BENCH_RC -eq 0 ] && [ $NVML_RC -eq 0 ]
