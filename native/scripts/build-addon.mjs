// `install` script of @operon/native: builds build/Release/operon_native.node
// with node-gyp. It must never fail an `npm install`: without the addon the
// worker transport falls back to sending tensor bytes over the socket. On
// failure it prints ONE line and exits 0; node-gyp's full output is kept in
// build/node-gyp.log for whoever wants to know why.
//
// OPERON_NATIVE=0 skips the build (the same kill switch the loader honours).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tag = "@operon/native:";

if (process.env.OPERON_NATIVE === "0") {
  console.log(
    `${tag} OPERON_NATIVE=0, addon not built; the native shared-memory transport is unavailable (socket fallback)`,
  );
  process.exit(0);
}

// npm hands lifecycle scripts the path of its bundled node-gyp; run by hand,
// use npm's copy beside this node, else whatever node-gyp is on PATH.
const bundled = path.join(
  path.dirname(process.execPath),
  "..",
  "lib",
  "node_modules",
  "npm",
  "node_modules",
  "node-gyp",
  "bin",
  "node-gyp.js",
);
const gyp = process.env.npm_config_node_gyp ?? (existsSync(bundled) ? bundled : undefined);
const [command, args] = gyp ? [process.execPath, [gyp, "rebuild"]] : ["node-gyp", ["rebuild"]];
// Offline machines cannot download Node's headers: when no nodedir is
// configured and the running Node's own headers are installed beside it
// (distro packages: /usr/include/node), build against those.
const env = { ...process.env };
const nodePrefix = path.resolve(path.dirname(process.execPath), "..");
if (!env.npm_config_nodedir && existsSync(path.join(nodePrefix, "include", "node", "node_api.h")))
  env.npm_config_nodedir = nodePrefix;
const result = spawnSync(command, args, { cwd: root, encoding: "utf8", env, maxBuffer: 64 * 1024 * 1024 });
const log = `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? `\n${result.error.stack}` : ""}`;

if (result.status === 0) {
  console.log(
    `${tag} built build/Release/operon_native.node (native shared-memory transport available), build/Release/operon_tritonhost.node (the worker's binding to libtritonserver.so) and build/Release/operon_nvml.node (GPU metrics through NVML)`,
  );
  process.exit(0);
}

let logPath = path.join(root, "build", "node-gyp.log");
try {
  mkdirSync(path.dirname(logPath), { recursive: true });
  writeFileSync(logPath, log);
} catch {
  logPath = "(log not written)";
}
// The most telling line: gyp's own complaint or the compiler's first error, before node-gyp's summary.
const lines = log.split("\n").map((line) => line.trim());
const reason =
  result.error?.message ??
  lines.find((line) => /^gyp: |\b(fatal )?error: /.test(line)) ??
  (lines.some((line) => /network connectivity/.test(line))
    ? `could not download the Node.js headers (offline?); set npm_config_nodedir to a directory with include/node, e.g. /usr`
    : undefined) ??
  lines.find((line) => /^gyp ERR! (?!stack|System|command|cwd|node -v|node-gyp -v|not ok)/.test(line)) ??
  `node-gyp exited with ${result.status ?? result.signal}`;
console.log(
  `${tag} native shared-memory transport unavailable (addon build failed: ${reason.slice(0, 200)}); workers will use the socket. Details: ${logPath}`,
);
process.exit(0);
