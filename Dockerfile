# syntax=docker/dockerfile:1
# Operon's image: `docker build -t operon .` at the repository root.
# Build stage: Node 20 on Debian 12 with g++/make/python3 (native/: libtritonserver.so, the native
# backends, the shared-memory addon), then every package and the Next.js console (deploy/docker/build.sh).
# Runtime stage: slim Debian, the built tree only, tini as PID 1 (it forwards SIGTERM to `operon serve`,
# which drains for --exit-timeout-secs, and reaps the worker processes), run as the unprivileged `node` user.
# No container engine runs where Operon is tested: deploy/docker/check-build-steps.sh runs build.sh in a
# clean clone instead (README "Deploy").

FROM node:20-bookworm AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends g++ make python3 \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/operon
COPY . .
RUN bash deploy/docker/build.sh

FROM node:20-bookworm-slim AS runtime
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini libstdc++6 ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/operon
COPY --from=build --chown=root:root /opt/operon /opt/operon
# Operon's own files (uploaded models, the embedded database when no PostgreSQL URL is given).
RUN mkdir -p /var/lib/operon /models && chown node:node /var/lib/operon
# Every `operon serve` flag has an OPERON_* variable (`operon serve --help`); a container listens on all
# interfaces (the CLI's default is loopback only) and keeps its data under /var/lib/operon.
ENV NODE_ENV=production \
  NEXT_TELEMETRY_DISABLED=1 \
  OPERON_MODEL_REPOSITORY=/models \
  OPERON_DATA_DIR=/var/lib/operon \
  OPERON_HTTP_ADDRESS=0.0.0.0 \
  OPERON_GRPC_ADDRESS=0.0.0.0 \
  OPERON_METRICS_ADDRESS=0.0.0.0 \
  OPERON_CONSOLE_ADDRESS=0.0.0.0
USER node
EXPOSE 8000 8001 8002 3000
ENTRYPOINT ["/usr/bin/tini", "-g", "--", "node", "/opt/operon/apps/cli/dist/main.js"]
CMD ["serve"]
