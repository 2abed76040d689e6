#!/usr/bin/env node
// Where bench §8's gap goes, inside the worker (issue 21): the
// text_direction preprocessing as the two models' execute() runs it, in
// this process, one PNG per call, no server: the hand-written
// text_direction_preprocess (pngjs decode + one fused loop) against
// text_direction_steps_preprocess (the operon_steps pipeline of
// examples/steps_repository), with each library step's own time. The served
// comparison (HTTP, ensemble hops, scheduler) is bench/step-library.mjs; this
// isolates the part that differs between the two, since both ensembles have
// the same three hops and the same classifier.
// Alone: `node bench/profile-step-pipeline.mjs` after `npm run build`.
// Env: OPERON_BENCH_ROUNDS (5), OPERON_BENCH_SECONDS (2); OPERON_STEPS_BASELINE:
// the folder of another build of @operon/steps (its dist/), e.g. of the
// commit before a change, measured in the same rounds, interleaved.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { ROOT } from "./lib/processes.mjs";

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
const f = (x, digits = 0) => `${x.median.toFixed(digits)} (${x.min.toFixed(digits)}–${x.max.toFixed(digits)})`;

/** A model.ts of the example repository, transpiled as the TypeScript backend does (bench/tmp/, git-ignored, so its imports resolve). */
async function loadModelTs(relative) {
  const source = readFileSync(join(ROOT, relative), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  mkdirSync(join(ROOT, "bench", "tmp"), { recursive: true });
  const file = join(ROOT, "bench", "tmp", `profile-${process.pid}-${relative.replaceAll("/", "_")}.mjs`);
  writeFileSync(file, outputText);
  try {
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(file, { force: true });
  }
}

/** The few parts of ExecuteContext / TypedRequest the two preprocess models use. */
function request(png) {
  const image = {
    name: "image",
    datatype: "BYTES",
    shape: [1, 1],
    toBuffers: () => [png],
  };
  return { inputs: new Map([["image", image]]), input: () => image, requestedOutputs: [] };
}
const ctx = {
  error: (code, message) => new Error(`${code}: ${message}`),
  tensor: {
    fromTypedArray: (name, shape, data, datatype = "FP32") => ({ name, shape, data, datatype }),
    bytes: (name, shape, data) => ({ name, shape, data, datatype: "BYTES" }),
  },
};

async function rate(seconds, fn) {
  const end = performance.now() + seconds * 1000;
  let calls = 0;
  const started = performance.now();
  while (performance.now() < end) {
    await fn();
    calls += 1;
  }
  return ((performance.now() - started) * 1000) / calls; // µs per call
}

export async function profileStepPipeline({ rounds = 5, seconds = 2, baseline } = {}) {
  const png = readFileSync(join(ROOT, "examples/images/text_0.png"));
  const handWritten = new (
    await loadModelTs("examples/model_repository/text_direction_preprocess/1/model.ts")
  ).default();
  handWritten.initialize({ parameters: {} });
  const modelDir = join(ROOT, "examples/steps_repository/text_direction_steps_preprocess");
  const config = {
    max_batch_size: 8,
    input: [{ name: "image", data_type: "TYPE_STRING", dims: [1] }],
    output: [{ name: "x", data_type: "TYPE_FP32", dims: [3, 48, 192] }],
  };
  const spec = JSON.parse(readFileSync(join(modelDir, "1", "steps.json"), "utf8"));
  /** One build of @operon/steps: the model as the worker runs it, and its pipeline alone (for per-step times). */
  const load = async (name, dist) => {
    const { default: StepPipelineModel } = await import(pathToFileURL(join(dist, "step-pipeline-model.js")).href);
    const { StepPipeline } = await import(pathToFileURL(join(dist, "step-pipeline.js")).href);
    const model = new StepPipelineModel();
    await model.initialize({ config, modelDir, modelVersion: "1", modelName: "preprocess", parameters: {} });
    const pipeline = await StepPipeline.create(
      spec,
      { inputs: [{ name: "image", datatype: "BYTES" }], outputs: [{ name: "x", datatype: "FP32" }] },
      { readFile: async () => Buffer.alloc(0) },
    );
    return { name, model, pipeline };
  };
  const variants = [await load("steps", join(ROOT, "packages/steps/dist"))];
  if (baseline !== undefined) variants.unshift(await load("steps before", join(baseline, "dist")));

  // Same numbers from all, or the comparison means nothing.
  const a = handWritten.execute([request(png)], ctx)[0].outputs[0].data;
  for (const variant of variants) {
    const b = (await variant.model.execute([request(png)], ctx))[0].outputs[0].data;
    let worst = 0;
    for (let i = 0; i < a.length; i += 1) worst = Math.max(worst, Math.abs(a[i] - b[i]));
    if (a.length !== b.length || worst > 1e-5)
      throw new Error(`${variant.name}: outputs differ: ${a.length} vs ${b.length}, max |Δ| ${worst}`);
  }

  const results = { handWritten: [], ...Object.fromEntries(variants.map((v) => [v.name, []])) };
  const perStep = Object.fromEntries(variants.map((v) => [v.name, new Map()]));
  for (let round = 1; round <= rounds; round += 1) {
    await rate(0.3, () => handWritten.execute([request(png)], ctx));
    results.handWritten.push(await rate(seconds, () => handWritten.execute([request(png)], ctx)));
    let line = `  round ${round}: hand-written ${results.handWritten.at(-1).toFixed(0)} µs`;
    for (const variant of variants) {
      await rate(0.3, () => variant.model.execute([request(png)], ctx));
      results[variant.name].push(await rate(seconds, () => variant.model.execute([request(png)], ctx)));
      // Each step's share: the pipeline alone, its own timings.
      const sums = new Map();
      let runs = 0;
      const end = performance.now() + seconds * 500;
      while (performance.now() < end) {
        const timings = [];
        await variant.pipeline.run(new Map([["image", { datatype: "BYTES", shape: [1], data: [png] }]]), timings);
        for (const t of timings) sums.set(t.id, (sums.get(t.id) ?? 0) + t.durationMs);
        runs += 1;
      }
      const mine = perStep[variant.name];
      for (const [id, sum] of sums) mine.set(id, [...(mine.get(id) ?? []), (sum * 1000) / runs]);
      line += `; ${variant.name} ${results[variant.name].at(-1).toFixed(0)} µs (${[...sums].map(([id, sum]) => `${id} ${((sum * 1000) / runs).toFixed(0)}`).join(", ")})`;
    }
    log(line);
  }
  return {
    handWrittenUs: spread(results.handWritten),
    variants: variants.map((v) => ({
      name: v.name,
      us: spread(results[v.name]),
      overHandWritten: spread(results[v.name].map((s, i) => s / results.handWritten[i])),
      perStepUs: Object.fromEntries([...perStep[v.name]].map(([id, values]) => [id, spread(values)])),
    })),
  };
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const result = await profileStepPipeline({
    rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 5),
    seconds: Number(process.env.OPERON_BENCH_SECONDS ?? 2),
    baseline: process.env.OPERON_STEPS_BASELINE,
  });
  process.stdout.write(
    `text_direction preprocess, one text_0.png (160x40) per execute, in-process, median (min–max) of rounds:\n` +
      `  hand-written ${f(result.handWrittenUs)} µs\n` +
      result.variants
        .map(
          (v) =>
            `  ${v.name} ${f(v.us)} µs → /hand-written ${f(v.overHandWritten, 2)}×; per step: ${Object.entries(
              v.perStepUs,
            )
              .map(([id, x]) => `${id} ${f(x)}`)
              .join(", ")} µs\n`,
        )
        .join(""),
  );
}
