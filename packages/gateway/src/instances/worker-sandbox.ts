import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { OperonError } from "@operon/protocol/errors";
import type { WorkerIdentity } from "./worker-environment.js";

/**
 * The sandbox of a worker process that runs untrusted code (a custom step
 * uploaded from the console, a model whose config sets `operon_sandbox`).
 * Layers, each enforced outside the model's reach:
 *   - Node's permission model (--experimental-permission): the process may
 *     read only its model's folder and the worker runtime's own
 *     files (the worker package, the workspace packages it imports, the
 *     installation's node_modules); it may write nowhere, start no child
 *     process, no worker thread, load no native addon. Denied calls throw
 *     ERR_ACCESS_DENIED in the model, which its request's error names.
 *   - a network namespace of its own (`unshare --net`): no interface but a
 *     loopback that is down, so every connect fails. Node's permission model
 *     does not cover the network; without a working `unshare` the server
 *     refuses to load sandboxed models rather than run them with a network.
 *   - limits the admin sets: the V8 heap (--max-old-space-size), the
 *     resident memory and the CPU time of one execution, and its wall-clock
 *     time (sandbox-guard.ts, from the gateway: the in-worker hang guard is
 *     a worker thread, which the sandbox forbids).
 */

/** The model config parameter that asks for the sandbox ("true"). */
export const SANDBOX_PARAMETER = "operon_sandbox";

/** The backends whose models can run sandboxed: the ones that run TypeScript. */
const SANDBOXABLE_BACKENDS = new Set(["typescript"]);

/** Admin-set limits of every sandboxed worker (serve flags --sandbox-*). */
export interface SandboxLimits {
  /** V8 heap (--max-old-space-size) and resident-memory cap, MiB. */
  memoryMb: number;
  /** CPU time one execution may use, ms. */
  cpuMsPerExecution: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { memoryMb: 512, cpuMsPerExecution: 10_000 };

/** What launchWorker needs to start a sandboxed worker. */
export interface WorkerSandbox {
  /** Paths the process may read (Node's --allow-fs-read). */
  readPaths: string[];
  heapLimitMb: number;
  /** Command and arguments the node command line is prefixed with (the network namespace). */
  wrapper: string[];
}

/** True when the config (or load parameters) ask for the sandbox; INVALID_ARG for a bad value or backend. */
export function isSandboxed(
  model: string,
  backend: string,
  config: Record<string, unknown>,
  parameters?: Record<string, string>,
): boolean {
  const configParameters = config["parameters"] as Record<string, { string_value?: string }> | undefined;
  const asked = parameters?.[SANDBOX_PARAMETER] ?? configParameters?.[SANDBOX_PARAMETER]?.string_value;
  if (asked === undefined || asked === "" || asked === "false") return false;
  if (asked !== "true") {
    throw new OperonError(
      "INVALID_ARG",
      `model '${model}': parameter ${SANDBOX_PARAMETER} must be "true" or "false", got ${JSON.stringify(asked)}`,
    );
  }
  if (!SANDBOXABLE_BACKENDS.has(backend)) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${model}': parameter ${SANDBOX_PARAMETER} applies to the ${[...SANDBOXABLE_BACKENDS].join(", ")} backend, not '${backend}'`,
    );
  }
  return true;
}

/**
 * The files the worker runtime reads: the worker package, the @operon
 * workspace packages it depends on (transitively, by their real paths:
 * node_modules holds symlinks to them), and the node_modules folders on
 * the way up from the worker package. Not the installation's other
 * folders (a model repository may sit there).
 */
export function workerRuntimeReadPaths(workerEntry: string): string[] {
  const workerPackage = packageRootOf(resolve(workerEntry));
  const paths = new Set<string>([workerPackage]);
  const modulesDirs: string[] = [];
  for (let dir = workerPackage; ; dir = dirname(dir)) {
    const modules = join(dir, "node_modules");
    if (existsSync(modules)) modulesDirs.push(realpathSync(modules));
    if (dirname(dir) === dir) break;
  }
  for (const modules of modulesDirs) paths.add(modules);
  const pending = [workerPackage];
  const seen = new Set<string>(pending);
  while (pending.length > 0) {
    const packageDir = pending.pop()!;
    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      if (!name.startsWith("@operon/")) continue;
      const linked = modulesDirs.map((modules) => join(modules, name)).find((candidate) => existsSync(candidate));
      if (linked === undefined) continue;
      const real = realpathSync(linked);
      paths.add(real);
      if (!seen.has(real)) {
        seen.add(real);
        pending.push(real);
      }
    }
  }
  return [...paths];
}

function packageRootOf(file: string): string {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above the worker entry '${file}'`);
  }
}

let probed: { wrapper: string[] } | { reason: string } | undefined;

/**
 * The `unshare` command line that gives the worker a network namespace of
 * its own, found once by trying it: as root `unshare --net` (then the
 * worker's account, --worker-user, is taken inside it with --setuid and
 * --setgid); otherwise in a user namespace (`unshare --user --net`), which
 * needs unprivileged user namespaces. Throws UNAVAILABLE saying why when
 * neither works: sandboxed code is not run with a network.
 */
export function networkIsolationWrapper(identity: WorkerIdentity | undefined): string[] {
  probed ??= probeNetworkIsolation();
  if ("reason" in probed) {
    throw new OperonError(
      "UNAVAILABLE",
      `sandboxed models cannot run on this host: no network namespace for their workers (${probed.reason})`,
    );
  }
  if (identity === undefined || probed.wrapper.includes("--user")) return probed.wrapper;
  return [probed.wrapper[0]!, "--net", "--setgid", String(identity.gid), "--setuid", String(identity.uid)];
}

function probeNetworkIsolation(): { wrapper: string[] } | { reason: string } {
  const attempts = process.getuid?.() === 0 ? [["--net"], ["--user", "--net"]] : [["--user", "--net"]];
  const failures: string[] = [];
  for (const flags of attempts) {
    const result = spawnSync("unshare", [...flags, "--", process.execPath, "-e", ""], {
      encoding: "utf8",
      timeout: 10_000,
    });
    if (result.status === 0) return { wrapper: ["unshare", ...flags] };
    const why = result.error?.message ?? (result.stderr.trim() || `exit ${result.status ?? result.signal}`);
    failures.push(`unshare ${flags.join(" ")}: ${why}`);
  }
  return { reason: failures.join("; ") };
}

/**
 * The V8 heap of a sandboxed worker: half its memory limit,
 * so that a growing heap fails with V8's own "heap out of memory" (which
 * the request's error names) before the resident-memory check fires.
 */
export function sandboxHeapLimitMb(limits: SandboxLimits): number {
  return Math.max(32, Math.floor(limits.memoryMb / 2));
}

/** Node's command-line flags for a sandboxed worker (before the entry). */
export function sandboxNodeFlags(sandbox: WorkerSandbox): string[] {
  return [
    "--experimental-permission",
    ...sandbox.readPaths.map((path) => `--allow-fs-read=${path}`),
    `--max-old-space-size=${sandbox.heapLimitMb}`,
    // The "experimental" warning would land in the logs at every start.
    "--no-warnings",
  ];
}
