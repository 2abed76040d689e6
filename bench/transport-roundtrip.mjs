// Round trip of one tensor (default 602,112 bytes: 1x3x224x224 FP32) between
// the gateway and a worker, by transport:
//   thread          ThreadInstance (the default for ONNX Runtime): a gateway worker_thread, echo backend
//   shm             WorkerProcess, shared-memory transport, echo backend
//   socket          WorkerProcess, tensor bytes in the socket frames, echo backend
//   worker_threads  an ArrayBuffer transferred to a worker thread and back (the target to approach)
//   memcpy          two in-process copies, there and back (the floor)
// Each: warm-up, then `iterations` timed round trips one after another;
// median / p10 / p90 in microseconds.
//
//   node bench/transport-roundtrip.mjs [--json] [--iterations 300] [--warmup 1000] [--bytes 602112] [--shm-bytes N]
//
// The long default warm-up is on purpose: the measured figure is a server's
// steady state. Copies out of shared memory land in memory the addon recycles
// once the garbage collector has freed earlier outputs, and that takes a few
// hundred round trips of 602 KB to reach; before it, every round trip
// page-faults through fresh memory (~150 faults, +100-300 µs here).
//
// Runs against the built dist/ (npm run build first). Importable:
//   import { measureTransport } from "./bench/transport-roundtrip.mjs";
//   const report = await measureTransport({ iterations: 300 });
import { Worker } from "node:worker_threads";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = {
  workerProcess: pathToFileURL(path.join(ROOT, "packages/gateway/dist/instances/worker-process.js")).href,
  threadInstance: pathToFileURL(path.join(ROOT, "packages/gateway/dist/instances/thread-instance.js")).href,
  threadEntry: path.join(ROOT, "packages/worker/dist/thread-main.js"),
  native: pathToFileURL(path.join(ROOT, "native/dist/index.js")).href,
  workerEntry: path.join(ROOT, "packages/worker/dist/main.js"),
};

/** @typedef {"thread" | "shm" | "socket" | "worker_threads" | "memcpy"} TransportName */
/**
 * @typedef {object} TransportResult
 * @property {TransportName} transport
 * @property {boolean} ok            false: could not run (see error)
 * @property {string} [error]
 * @property {number} samples
 * @property {number} medianUs
 * @property {number} p10Us
 * @property {number} p90Us
 * @property {number} minUs
 * @property {number} meanUs
 */
/**
 * @typedef {object} TransportReport
 * @property {number} byteLength
 * @property {number} iterations
 * @property {number} warmup
 * @property {{ node: string; cpus: number; cpuModel: string; sharedMemory: "native" | "fallback"; sharedMemoryReason: string | null }} environment
 * @property {TransportResult[]} results
 */
/**
 * @typedef {object} MeasureOptions
 * @property {number} [byteLength]   default 602112
 * @property {number} [iterations]   default 300
 * @property {number} [warmup]       default 1000 (see below)
 * @property {TransportName[]} [transports]  default all four
 * @property {string} [workerEntry]  default packages/worker/dist/main.js
 * @property {number} [sharedMemoryBytes]  shm segment size; default the transport's (64 MiB)
 */

export const TRANSPORTS = /** @type {const} */ (["thread", "shm", "socket", "worker_threads", "memcpy"]);

/**
 * @param {MeasureOptions} [options]
 * @returns {Promise<TransportReport>}
 */
export async function measureTransport(options = {}) {
  const byteLength = options.byteLength ?? 602_112;
  const iterations = options.iterations ?? 300;
  const warmup = options.warmup ?? 1000;
  const transports = options.transports ?? [...TRANSPORTS];
  const native = await import(DIST.native);
  const input = Buffer.allocUnsafe(byteLength);
  for (let i = 0; i + 4 <= byteLength; i += 4) input.writeFloatLE(i / 4, i);

  /** @type {TransportResult[]} */
  const results = [];
  for (const transport of transports) {
    try {
      const roundTrip = await setUp(transport, input, options);
      try {
        results.push({ transport, ok: true, ...(await time(roundTrip.run, iterations, warmup)) });
      } finally {
        await roundTrip.close();
      }
    } catch (error) {
      results.push({
        transport,
        ok: false,
        error: error instanceof Error ? error.message : String(error),
        samples: 0,
        medianUs: NaN,
        p10Us: NaN,
        p90Us: NaN,
        minUs: NaN,
        meanUs: NaN,
      });
    }
  }
  return {
    byteLength,
    iterations,
    warmup,
    environment: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      sharedMemory: native.sharedMemoryKind(),
      sharedMemoryReason: native.sharedMemoryUnavailableReason() ?? null,
    },
    results,
  };
}

/**
 * @param {TransportName} transport
 * @param {Buffer} input
 * @param {MeasureOptions} options
 * @returns {Promise<{ run: () => Promise<void> | void; close: () => Promise<void> }>}
 */
async function setUp(transport, input, options) {
  switch (transport) {
    case "thread": {
      const { ThreadInstance } = await import(DIST.threadInstance);
      const instance = ThreadInstance.start({ entry: DIST.threadEntry, instanceName: "bench_thread" });
      await instance.load({ backend: "echo", modelPath: "", config: {} });
      const tensor = { name: "INPUT0", datatype: "FP32", shape: [input.length / 4], data: input };
      const { outputs } = await instance.execute([tensor]);
      if (!outputs[0]?.data.equals(input)) throw new Error("thread: the echo did not return the input bytes");
      return {
        run: async () => {
          await instance.execute([tensor]);
        },
        close: () => instance.stop(),
      };
    }
    case "shm":
    case "socket": {
      const { WorkerProcess } = await import(DIST.workerProcess);
      const worker = await WorkerProcess.spawn({
        entry: options.workerEntry ?? DIST.workerEntry,
        instanceName: `bench_${transport}`,
        transport,
        ...(options.sharedMemoryBytes !== undefined ? { sharedMemoryBytes: options.sharedMemoryBytes } : {}),
        onLog: () => undefined,
      });
      if (worker.transportKind !== transport) throw new Error(`asked for ${transport}, got ${worker.transportKind}`);
      await worker.load({ backend: "echo", modelPath: "", config: {} });
      const tensor = { name: "INPUT0", datatype: "FP32", shape: [input.length / 4], data: input };
      const { outputs } = await worker.execute([tensor]);
      if (!outputs[0]?.data.equals(input)) throw new Error(`${transport}: the echo did not return the input bytes`);
      return {
        run: async () => {
          await worker.execute([tensor]);
        },
        close: () => worker.stop(),
      };
    }
    case "worker_threads": {
      const thread = new Worker(
        `const { parentPort } = require("node:worker_threads");
         parentPort.on("message", (buffer) => parentPort.postMessage(buffer, [buffer]));`,
        { eval: true },
      );
      let buffer = input.buffer.slice(input.byteOffset, input.byteOffset + input.length);
      /** @type {(value: ArrayBuffer) => void} */
      let resolve = () => undefined;
      thread.on("message", (value) => resolve(value));
      const run = async () => {
        const back = new Promise((r) => {
          resolve = r;
        });
        thread.postMessage(buffer, [buffer]);
        buffer = /** @type {ArrayBuffer} */ (await back);
      };
      await run();
      if (!Buffer.from(buffer).equals(input))
        throw new Error("worker_threads: the echo did not return the input bytes");
      return { run, close: async () => void (await thread.terminate()) };
    }
    case "memcpy": {
      const there = Buffer.allocUnsafe(input.length);
      const back = Buffer.allocUnsafe(input.length);
      return {
        run: () => {
          input.copy(there);
          there.copy(back);
        },
        close: async () => undefined,
      };
    }
    default:
      throw new Error(`unknown transport '${transport}'`);
  }
}

/**
 * @param {() => Promise<void> | void} run
 * @param {number} iterations
 * @param {number} warmup
 */
async function time(run, iterations, warmup) {
  for (let i = 0; i < warmup; i += 1) await run();
  const samples = new Float64Array(iterations);
  for (let i = 0; i < iterations; i += 1) {
    const started = process.hrtime.bigint();
    await run();
    samples[i] = Number(process.hrtime.bigint() - started) / 1000;
  }
  samples.sort();
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  let sum = 0;
  for (const sample of samples) sum += sample;
  return {
    samples: iterations,
    medianUs: round(at(0.5)),
    p10Us: round(at(0.1)),
    p90Us: round(at(0.9)),
    minUs: round(samples[0]),
    meanUs: round(sum / iterations),
  };
}

function round(value) {
  return Math.round(value * 10) / 10;
}

/** @param {TransportReport} report */
export function formatReport(report) {
  const lines = [
    `round trip of ${report.byteLength.toLocaleString("en-US")} bytes, ${report.iterations} iterations after ${report.warmup} warm-up (µs)`,
    `node ${report.environment.node}, ${report.environment.cpus} CPUs (${report.environment.cpuModel}), shared memory: ${report.environment.sharedMemory}` +
      (report.environment.sharedMemoryReason ? ` (${report.environment.sharedMemoryReason})` : ""),
    "",
    `${"transport".padEnd(16)}${"median".padStart(10)}${"p10".padStart(10)}${"p90".padStart(10)}${"min".padStart(10)}`,
  ];
  for (const result of report.results) {
    if (!result.ok) {
      lines.push(`${result.transport.padEnd(16)}  unavailable: ${result.error}`);
      continue;
    }
    lines.push(
      `${result.transport.padEnd(16)}${result.medianUs.toFixed(0).padStart(10)}${result.p10Us.toFixed(0).padStart(10)}${result.p90Us.toFixed(0).padStart(10)}${result.minUs.toFixed(0).padStart(10)}`,
    );
  }
  return lines.join("\n");
}

function parseArgs(argv) {
  const options = { json: false, measure: /** @type {MeasureOptions} */ ({}) };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const number = () => {
      const value = Number(argv[(i += 1)]);
      if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${arg} needs a non-negative integer`);
      return value;
    };
    if (arg === "--json") options.json = true;
    else if (arg === "--iterations") options.measure.iterations = number();
    else if (arg === "--warmup") options.measure.warmup = number();
    else if (arg === "--bytes") options.measure.byteLength = number();
    else if (arg === "--shm-bytes") options.measure.sharedMemoryBytes = number();
    else throw new Error(`unknown argument '${arg}' (known: --json --iterations N --warmup N --bytes N --shm-bytes N)`);
  }
  return options;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const { json, measure } = parseArgs(process.argv.slice(2));
  const report = await measureTransport(measure);
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`);
}
