#!/usr/bin/env node
// Runs before `npm test` (the root "pretest" script): makes sure the system
// packages the system tests need are present, installing them from Debian
// when it can. Today that is the independent gRPC client stack used to
// cross-check Operon's gRPC API (e2e/python/triton_grpc_client_check.py):
// Debian's python3-grpcio, python3-grpc-tools and python3-numpy.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const PYTHON = process.env.OPERON_TEST_PYTHON ?? "/usr/bin/python3";
const DEBIAN_PACKAGES = ["python3-grpcio", "python3-grpc-tools", "python3-numpy"];

function pythonHasGrpc() {
  if (!existsSync(PYTHON)) return false;
  return spawnSync(PYTHON, ["-c", "import grpc, grpc_tools.protoc, numpy"], { stdio: "ignore" }).status === 0;
}

if (pythonHasGrpc()) process.exit(0);

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const hasApt = existsSync("/usr/bin/apt-get");
if (!hasApt) {
  console.error(`The gRPC cross-check test needs Python with grpc, grpc_tools and numpy at ${PYTHON} (set OPERON_TEST_PYTHON to use another).`);
  process.exit(1);
}
const prefix = isRoot ? [] : ["sudo"];
console.error(`Installing ${DEBIAN_PACKAGES.join(" ")} from Debian for the gRPC cross-check test…`);
const run = (args) => execFileSync(prefix.length > 0 ? prefix[0] : args[0], prefix.length > 0 ? args : args.slice(1), { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
try {
  run(["apt-get", "update"]);
  run(["apt-get", "install", "-y", "--no-install-recommends", ...DEBIAN_PACKAGES]);
} catch (error) {
  console.error(`Could not install ${DEBIAN_PACKAGES.join(" ")}: ${error.message}`);
  process.exit(1);
}
if (!pythonHasGrpc()) {
  console.error(`Installed, but ${PYTHON} still cannot import grpc, grpc_tools.protoc and numpy.`);
  process.exit(1);
}
