#!/usr/bin/env bash
# What `docker build` would do, without a container engine: clone the committed tree (a clone holds
# no ignored file, as .dockerignore keeps them out of the build context), run the build stage's
# script, then start the result the way the runtime stage's ENTRYPOINT and ENV do and ask Triton's
# health endpoints. Usage: bash deploy/docker/check-build-steps.sh [ref] (default HEAD).
set -euo pipefail
source_repo=$(git rev-parse --show-toplevel)
ref=${1:-HEAD}
work=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone --quiet --no-checkout "$source_repo" "$work/operon"
git -C "$work/operon" checkout --quiet "$(git -C "$source_repo" rev-parse "$ref")"
cd "$work/operon"
started=$(date +%s)
bash deploy/docker/build.sh
echo "check-build-steps: build stage done in $(($(date +%s) - started)) s"

# The runtime stage: its ENV (ports moved off Triton's, which may be taken on a shared machine).
http_port=${CHECK_HTTP_PORT:-18000}
env -i PATH="$PATH" HOME="$work" NODE_ENV=production NEXT_TELEMETRY_DISABLED=1 \
  OPERON_MODEL_REPOSITORY="$work/operon/examples/model_repository" OPERON_DATA_DIR="$work/data" \
  OPERON_HTTP_ADDRESS=127.0.0.1 OPERON_GRPC_ADDRESS=127.0.0.1 OPERON_METRICS_ADDRESS=127.0.0.1 \
  OPERON_HTTP_PORT="$http_port" OPERON_GRPC_PORT=$((http_port + 1)) OPERON_METRICS_PORT=$((http_port + 2)) \
  OPERON_CONTROL_PLANE=false OPERON_MODEL_CONTROL_MODE=explicit OPERON_LOAD_MODEL='*' \
  node "$work/operon/apps/cli/dist/main.js" serve &
server=$!
for _ in $(seq 1 120); do
  if curl -sf "http://127.0.0.1:$http_port/v2/health/ready" >/dev/null; then
    echo "check-build-steps: /v2/health/live $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http_port/v2/health/live"), /v2/health/ready 200"
    curl -sf "http://127.0.0.1:$((http_port + 2))/metrics" | grep -q nv_inference_count && echo "check-build-steps: metrics served"
    kill -TERM "$server"
    wait "$server" && echo "check-build-steps: SIGTERM drained and exited 0"
    exit 0
  fi
  kill -0 "$server" 2>/dev/null || { echo "check-build-steps: the server exited before it was ready" >&2; exit 1; }
  sleep 1
done
echo "check-build-steps: not ready within 120 s" >&2
exit 1
