// Starting and stopping the processes the benchmark measures.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");

function waitForLine(child, pattern, timeoutMs, what) {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start in ${timeoutMs} ms:\n${output.slice(-3000)}`)),
      timeoutMs,
    );
    const onData = (chunk) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with code ${code} before it was ready:\n${output.slice(-3000)}`));
    });
  });
}

function forwardOutput(child, onOutput) {
  if (onOutput === undefined) return;
  child.stdout?.on("data", (chunk) => onOutput(chunk.toString()));
  child.stderr?.on("data", (chunk) => onOutput(chunk.toString()));
}

function stopper(child) {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
    });
}

/**
 * `operon serve` as a user starts it (control plane on its own thread, no console) on free ports and a fresh data dir;
 * logs discarded (only the banner is read). `options.env`: added to the environment; `options.api`: also wait for the
 * control plane API's address (apiUrl); `options.startTimeoutMs`: how long it may take to start (default 60 s);
 * `options.onOutput`: called with each chunk of its stdout and stderr (e.g. a V8 trace's lines); `options.root`: another
 * built checkout whose operon to start (an A/B against this one's). The resource scheduler is off unless extraArgs
 * name --resource-scheduler: it adds and moves instances under load, so a measurement would include its moves (a
 * MobileNet run with it on grew threads mid-round, 2026-12-06).
 */
export async function startOperon(repository, extraArgs = [], options = {}) {
  const child = spawn(
    process.execPath,
    [
      // e.g. ["--cpu-prof", "--cpu-prof-dir=..."] to profile the server under a bench's load
      ...(options.nodeArgs ?? []),
      ...operonServeArgs(repository, extraArgs, options.root),
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...options.env } },
  );
  forwardOutput(child, options.onOutput);
  const api = options.api
    ? waitForLine(child, /Operon API on (\S+)\/api\/trpc/, options.startTimeoutMs ?? 60_000, "the control plane API")
    : null;
  api?.catch(() => undefined); // awaited below; not unhandled while the banner is awaited
  const match = await waitForLine(
    child,
    /HTTP on (http:\/\/[^\s,]+), gRPC on ([^\s,]+)(?:, metrics on (\S+))?/,
    options.startTimeoutMs ?? 60_000,
    "operon serve",
  );
  const apiUrl = api === null ? undefined : (await api)[1];
  return {
    httpUrl: match[1],
    grpcAddress: match[2],
    metricsUrl: match[3],
    apiUrl,
    pid: child.pid,
    stop: stopper(child),
  };
}

/**
 * The script and arguments of `operon serve` as the benches start it (after node's own flags): `repository`, every
 * port chosen by the OS, the control plane without the console, a fresh data folder, the resource scheduler off
 * unless `extraArgs` name it (see startOperon), then `extraArgs`; `root` is the checkout (default this one).
 */
export function operonServeArgs(repository, extraArgs = [], root = ROOT) {
  const schedulerArgs = extraArgs.includes("--resource-scheduler") ? [] : ["--resource-scheduler", "false"];
  return [
    join(root, "apps/cli/bin/operon.js"),
    "serve",
    "--model-repository",
    repository,
    "--http-port",
    "0",
    "--grpc-port",
    "0",
    "--metrics-port",
    "0",
    "--exit-timeout-secs",
    "2",
    "--api-port",
    "0",
    "--console=false",
    "--data-dir",
    mkdtempSync(join(tmpdir(), "operon-bench-data-")),
    ...schedulerArgs,
    ...extraArgs,
  ];
}

/**
 * A baseline server of bench/baselines/ (its first line says `listening <port>`); `options.nodeArgs`,
 * `options.env` and `options.onOutput` as for startOperon.
 */
export async function startBaseline(script, args, options = {}) {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), join(ROOT, "bench/baselines", script), ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...options.env },
  });
  forwardOutput(child, options.onOutput);
  const match = await waitForLine(child, /listening (\d+)/, 30_000, script);
  return {
    url: `http://127.0.0.1:${match[1]}`,
    address: `127.0.0.1:${match[1]}`,
    pid: child.pid,
    stop: stopper(child),
  };
}
