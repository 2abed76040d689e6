import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * `operon serve` runs the gateway on the process's main thread and the
 * control plane on a thread of its own. The main thread imports main.ts and
 * every command module; none of them may load the control plane's code
 * (@operon/api, the Prisma client, tRPC, DuckDB, TypeScript) at import time:
 * it would stay in the gateway's heap (it tripled it, 21 → 50 MB), which
 * every major GC of the request path walks. Commands that need it load it
 * when they run. This lists what importing the built command modules loads,
 * through an ESM resolve hook.
 */

const dist = join(dirname(fileURLToPath(import.meta.url)), "../dist");
const COMMAND_MODULES = [
  "serve-command.js",
  "admin-command.js",
  "keys-command.js",
  "job-command.js",
  "migrate-command.js",
  "perf-command.js",
];
const CONTROL_PLANE_CODE = /packages\/(api|db)\/dist\/|node_modules\/(typescript|@prisma\/client|@duckdb|@trpc)\//;
/** Modules of those packages written to import nothing, for the gateway's thread. */
const LIGHT_MODULES = [
  "packages/db/dist/database-url.js",
  "packages/api/dist/services/resource-scheduler/resource-scheduler-defaults.js",
];
const isControlPlaneCode = (url: string): boolean =>
  CONTROL_PLANE_CODE.test(url) && !LIGHT_MODULES.some((light) => url.endsWith(light));

const HOOK = `
let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  port.postMessage(resolved.url);
  return resolved;
}`;

function modulesLoadedBy(entries: string[]): string[] {
  const script = `
import { register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const loaded = [];
port1.on("message", (url) => loaded.push(url));
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)}, { data: { port: port2 }, transferList: [port2] });
for (const entry of ${JSON.stringify(entries)}) await import(entry);
await new Promise((resolve) => setTimeout(resolve, 200));
port1.close();
process.stdout.write(JSON.stringify(loaded));
`;
  const output = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: dist,
    encoding: "utf8",
    timeout: 60_000,
  });
  return JSON.parse(output) as string[];
}

describe("modules on the gateway's thread", () => {
  it("importing every command module loads the gateway but no control-plane code", () => {
    const loaded = modulesLoadedBy(COMMAND_MODULES.map((file) => join(dist, file)));
    // The hook saw the imports (this cannot pass by seeing nothing).
    expect(loaded.some((url) => url.includes("/packages/gateway/dist/"))).toBe(true);
    expect(loaded.filter(isControlPlaneCode)).toEqual([]);
  });

  it("the check sees control-plane code when a module does load it", () => {
    const loaded = modulesLoadedBy([join(dist, "control-plane-runtime.js")]);
    expect(loaded.some(isControlPlaneCode)).toBe(true);
  });
});
