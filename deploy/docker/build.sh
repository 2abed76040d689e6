#!/usr/bin/env bash
# The image's build stage (Dockerfile), also run as is by deploy/docker/check-build-steps.sh
# in a clean clone, since no container engine runs on the machines that test Operon.
# Installs with the lock file, builds native/ (g++: libtritonserver.so, the backends,
# the shared-memory addon), every package and the console, then drops the dev tools.
set -euo pipefail
export ONNXRUNTIME_NODE_INSTALL=skip NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1
npm ci --no-audit --no-fund
npm run build
# The built native library must be there: an image without it would serve no native backend.
test -f native/build/tritonserver/lib/libtritonserver.so || {
  echo "build.sh: native/build/tritonserver/lib/libtritonserver.so was not built" >&2
  exit 1
}
test -f apps/console/.next/BUILD_ID || { echo "build.sh: the console was not built" >&2; exit 1; }
npm prune --omit=dev --no-audit --no-fund
