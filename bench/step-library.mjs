#!/usr/bin/env node
// The step library against hand-written TypeScript steps (issue 21; section 8
// of `npm run bench`, or alone: `node bench/step-library.mjs` after
// `npm run build`): the example repository's `text_direction` (TypeScript
// preprocessing with pngjs and top-k in model.ts files) and
// `text_direction_steps` (the same pipeline from built-in steps: sharp
// decode, image.resize / normalize / swap-rb / layout / pad, tensor.topk),
// one server, one PNG per request over HTTP binary, wrk at concurrency 1
// and 4, the two interleaved round by round. Both run the same classifier.
// Env as run-bench: OPERON_BENCH_ROUNDS (3), OPERON_BENCH_SECONDS (3).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
const MODELS = ["text_direction", "text_direction_steps"];

function pngBody(file) {
  const element = Buffer.concat([Buffer.alloc(4), file]);
  element.writeUInt32LE(file.length, 0);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: element.length } }],
      parameters: { binary_data_output: true },
    }),
  );
  return {
    body: Buffer.concat([header, element]),
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  };
}

export async function measureStepLibrary({ rounds = 3, seconds = 3 } = {}) {
  log("8. step library: text_direction (TypeScript steps) vs text_direction_steps (built-in steps)");
  const operon = await startOperon(join(ROOT, "examples/model_repository"), [
    "--model-repository",
    join(ROOT, "examples/steps_repository"),
    "--control-plane=false",
  ]);
  try {
    const { body, headers } = pngBody(readFileSync(join(ROOT, "examples/images/text_0.png")));
    const targets = MODELS.map((name) => ({
      name,
      request: wrkRequest(`${operon.httpUrl}/v2/models/${name}/infer`, body, headers),
    }));
    const byConcurrency = {};
    for (const concurrency of [1, 4]) {
      const results = Object.fromEntries(MODELS.map((name) => [name, []]));
      for (let round = 1; round <= rounds; round += 1) {
        for (const target of targets) {
          await runWrk(target.request, { connections: concurrency, seconds: 1 });
          const result = await runWrk(target.request, { connections: concurrency, seconds });
          if (result.errors > 0)
            throw new Error(`${target.name}: ${result.errors} errors, first: ${result.firstError}`);
          results[target.name].push(result);
          log(
            `  round ${round} ${target.name.padEnd(22)} c=${concurrency} ${result.requestsPerSec.toFixed(0).padStart(6)} req/s  p50 ${String(Math.round(result.p50Us)).padStart(6)} µs  p99 ${String(Math.round(result.p99Us)).padStart(6)} µs`,
          );
        }
      }
      const pick = (name, key) => results[name].map((r) => r[key]);
      byConcurrency[concurrency] = {
        typescript: {
          requestsPerSec: spread(pick(MODELS[0], "requestsPerSec")),
          p50Us: spread(pick(MODELS[0], "p50Us")),
        },
        steps: { requestsPerSec: spread(pick(MODELS[1], "requestsPerSec")), p50Us: spread(pick(MODELS[1], "p50Us")) },
        stepsVsTypescriptRps: spread(
          results[MODELS[1]].map((r, i) => r.requestsPerSec / results[MODELS[0]][i].requestsPerSec),
        ),
      };
    }
    return { image: "examples/images/text_0.png (160x40 RGB PNG)", byConcurrency };
  } finally {
    await operon.stop();
  }
}

export function renderStepLibrarySection(section) {
  const f = (x, digits = 0) => `${x.median.toFixed(digits)} (${x.min.toFixed(digits)}–${x.max.toFixed(digits)})`;
  const lines = [
    `## 8. Step library`,
    "",
    `- text_direction (TypeScript steps) vs text_direction_steps (built-in steps), ${section.image}`,
  ];
  for (const [concurrency, row] of Object.entries(section.byConcurrency)) {
    lines.push(
      `- c=${concurrency}: ${f(row.typescript.requestsPerSec)} vs ${f(row.steps.requestsPerSec)} req/s → steps/TypeScript **${f(row.stepsVsTypescriptRps, 2)}×**; p50 ${f(row.typescript.p50Us)} vs ${f(row.steps.p50Us)} µs`,
    );
  }
  lines.push("");
  return lines.join("\n");
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const section = await measureStepLibrary({
    rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 3),
    seconds: Number(process.env.OPERON_BENCH_SECONDS ?? 3),
  });
  process.stdout.write(`${renderStepLibrarySection(section)}\n`);
  process.stdout.write(`${JSON.stringify(section, null, 2)}\n`);
}
