#!/usr/bin/env node
// Soak (issue "Nobody gets in, nothing is lost"): mixed HTTP, gRPC and
// streaming traffic with model loads and unloads, for OPERON_SOAK_MINUTES
// (default 10), against `operon serve` on the example repository. Samples
// the RSS of the gateway and of every worker process every 5 s and reports
// growth after warm-up (the first 20 % of the run); any unexpected error
// (anything but the 503s a model being unloaded may answer) is counted.
// Writes bench/results/soak-<stamp>.md and soak-latest.md.
//
// usage: npm run build && node bench/soak.mjs
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { definition } from "./lib/grpc-bench.mjs";
import { ROOT, startOperon } from "./lib/processes.mjs";

const MINUTES = Number(process.env.OPERON_SOAK_MINUTES ?? 10);
const log = (line) => process.stderr.write(`${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const server = await startOperon(join(ROOT, "examples/model_repository"), [
  "--model-control-mode",
  "explicit",
  "--load-model",
  "*",
]);
log(`soak: ${MINUTES} min against ${server.httpUrl} / ${server.grpcAddress} (pid ${server.pid})`);

const service = grpc.loadPackageDefinition(definition).inference.GRPCInferenceService;
const grpcClient = new service(server.grpcAddress, grpc.credentials.createInsecure());

const addSub = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
  ],
});
const counts = { http: 0, grpc: 0, stream: 0, loads: 0, expected503: 0, unexpected: 0 };
const unexpected = [];
const note = (what) => {
  counts.unexpected += 1;
  if (unexpected.length < 10) unexpected.push(what);
};

const end = Date.now() + MINUTES * 60_000;
let unloaded = false;
const httpLoop = async () => {
  while (Date.now() < end) {
    const model = Math.random() < 0.5 ? "add_sub" : "identity_bytes";
    const body =
      model === "add_sub"
        ? addSub
        : JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 1], data: ["soak"] }] });
    const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, { method: "POST", body }).catch(
      (error) => ({ status: 0, error }),
    );
    if (response.status === 200) counts.http += 1;
    else if (response.status === 503 || (response.status === 404 && unloaded)) counts.expected503 += 1;
    else note(`HTTP ${model}: ${response.status}`);
    if (response.text) await response.text();
  }
};
const grpcLoop = async () => {
  while (Date.now() < end) {
    const ok = await new Promise((resolve) =>
      grpcClient.ModelInfer(
        {
          model_name: "add_sub",
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
            { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
          ],
          raw_input_contents: [
            Buffer.from(new Float32Array(16).fill(1).buffer),
            Buffer.from(new Float32Array(16).fill(2).buffer),
          ],
        },
        (error) => resolve(error ? error : true),
      ),
    );
    if (ok === true) counts.grpc += 1;
    else if (ok.code === grpc.status.UNAVAILABLE || ok.code === grpc.status.NOT_FOUND) counts.expected503 += 1;
    else note(`gRPC: ${ok.code} ${ok.details}`);
  }
};
const streamLoop = async () => {
  while (Date.now() < end) {
    const response = await fetch(`${server.httpUrl}/v2/models/text_generator/generate_stream`, {
      method: "POST",
      body: JSON.stringify({ text_input: "one two three four" }),
    }).catch((error) => ({ status: 0, error }));
    if (response.status === 200) {
      const text = await response.text();
      if ((text.match(/^data:/gm) ?? []).length === 5) counts.stream += 1;
      else note(`stream: ${text.slice(0, 80)}`);
    } else note(`stream: ${response.status}`);
  }
};
// Every 20 s: unload identity_bytes, wait, load it again (the control path under traffic).
const loadLoop = async () => {
  while (Date.now() < end - 20_000) {
    await sleep(20_000);
    unloaded = true;
    const unload = await fetch(`${server.httpUrl}/v2/repository/models/identity_bytes/unload`, { method: "POST" });
    await sleep(2_000);
    const load = await fetch(`${server.httpUrl}/v2/repository/models/identity_bytes/load`, { method: "POST" });
    unloaded = false;
    if (unload.status === 200 && load.status === 200) counts.loads += 1;
    else note(`load/unload: ${unload.status}/${load.status}`);
  }
};

const samples = [];
const rssOf = (pid) => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;
  } catch {
    return 0;
  }
};
const workerPids = () => {
  try {
    return execFileSync("pgrep", ["-P", String(server.pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};
const sampler = async () => {
  const started = Date.now();
  while (Date.now() < end) {
    const workers = workerPids();
    samples.push({
      atS: (Date.now() - started) / 1000,
      gatewayRss: rssOf(server.pid),
      workersRss: workers.reduce((sum, pid) => sum + rssOf(pid), 0),
      workers: workers.length,
    });
    await sleep(5_000);
  }
};

await Promise.all([
  ...Array.from({ length: 4 }, httpLoop),
  ...Array.from({ length: 2 }, grpcLoop),
  streamLoop(),
  loadLoop(),
  sampler(),
]);
grpcClient.close();
await server.stop();

const warm = samples.filter((sample) => sample.atS >= (MINUTES * 60) / 5);
const first = warm[0];
const last = warm[warm.length - 1];
const max = (key) => Math.max(...warm.map((sample) => sample[key]));
const mib = (bytes) => (bytes / 1024 / 1024).toFixed(0);
const growth = (key) => (first && last ? (100 * (last[key] - first[key])) / first[key] : NaN);
const lines = [
  "# Operon soak",
  "",
  `${new Date().toISOString()} · ${MINUTES} min · 4 HTTP loops (add_sub, identity_bytes), 2 gRPC loops (add_sub), 1 generate_stream loop (text_generator), identity_bytes unloaded and loaded every 20 s`,
  "",
  `| | requests |`,
  `|---|---|`,
  `| HTTP infer | ${counts.http} |`,
  `| gRPC ModelInfer | ${counts.grpc} |`,
  `| generate_stream (5 events each) | ${counts.stream} |`,
  `| unload + load cycles | ${counts.loads} |`,
  `| 503/404 while identity_bytes was unloaded (expected) | ${counts.expected503} |`,
  `| unexpected errors | ${counts.unexpected} |`,
  "",
  `After warm-up (from ${first?.atS.toFixed(0)} s): gateway RSS ${mib(first?.gatewayRss ?? 0)} → ${mib(last?.gatewayRss ?? 0)} MiB (${growth("gatewayRss").toFixed(1)} %, peak ${mib(max("gatewayRss"))} MiB); worker processes' RSS ${mib(first?.workersRss ?? 0)} → ${mib(last?.workersRss ?? 0)} MiB (${growth("workersRss").toFixed(1)} %, peak ${mib(max("workersRss"))} MiB). Goal: within 10 %, no unexpected errors.`,
  "",
  ...(unexpected.length > 0 ? ["Unexpected errors (first 10):", "", ...unexpected.map((what) => `- ${what}`), ""] : []),
  "Samples (s, gateway MiB, workers MiB, worker processes):",
  "",
  samples
    .map((sample) => `${sample.atS.toFixed(0)} ${mib(sample.gatewayRss)} ${mib(sample.workersRss)} ${sample.workers}`)
    .join(" · "),
  "",
];
const markdown = `${lines.join("\n")}\n`;
mkdirSync(join(ROOT, "bench/results"), { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
writeFileSync(join(ROOT, "bench/results", `soak-${stamp}.md`), markdown);
writeFileSync(join(ROOT, "bench/results", "soak-latest.md"), markdown);
process.stdout.write(markdown);
process.exit(counts.unexpected === 0 ? 0 : 1);
