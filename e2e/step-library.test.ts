import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BinaryOutput, inferBinary } from "./support/http-binary-client.js";
import {
  EXAMPLE_REPOSITORY,
  REPO_ROOT,
  type RunningOperon,
  startOperon,
  tempRepository,
  workerProcesses,
} from "./support/operon-process.js";

/**
 * The built-in step library through the real server: `text_direction_steps`
 * (the text_direction pipeline rebuilt from operon_steps models, no model
 * code) answers what the hand-written TypeScript `text_direction` answers,
 * within 1e-5, over the same images, batched and alone; its steps run in
 * worker processes; a bad image fails its own request naming the step; and a
 * steps.json with bad parameters fails its load naming the step and field.
 */
const IMAGES = join(REPO_ROOT, "examples/images");
const STEPS_REPOSITORY = join(REPO_ROOT, "examples/steps_repository");
const png = (name: string): Buffer => readFileSync(join(IMAGES, name));
const FILES = [png("text_0.png"), png("text_180.png"), png("text_grey.png")];

function bytesTensor(elements: Buffer[]): Buffer {
  return Buffer.concat(
    elements.flatMap((element) => {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(element.length);
      return [length, element];
    }),
  );
}

function bytesElements(data: Buffer): string[] {
  const elements: string[] = [];
  for (let offset = 0; offset < data.length; ) {
    const length = data.readUInt32LE(offset);
    elements.push(data.subarray(offset + 4, offset + 4 + length).toString("utf8"));
    offset += 4 + length;
  }
  return elements;
}

const floats = (data: Buffer): number[] => Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(i * 4));
const output = (outputs: BinaryOutput[], name: string): BinaryOutput => {
  const found = outputs.find((o) => o.name === name);
  if (found === undefined) throw new Error(`no output '${name}' in ${outputs.map((o) => o.name).join(", ")}`);
  return found;
};
const classify = (server: RunningOperon, files: Buffer[], model: string) =>
  inferBinary(server.httpUrl, model, [
    { name: "image", datatype: "BYTES", shape: [files.length, 1], data: bytesTensor(files) },
  ]);
const worst = (a: number[], b: number[]): number => Math.max(0, ...a.map((value, i) => Math.abs(value - b[i]!)));

describe("step library: text_direction rebuilt from built-in steps (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const extra = tempRepository("operon-e2e-steps-");
    const stepsModel = (name: string, steps: unknown): void => {
      mkdirSync(join(extra, name, "1"), { recursive: true });
      writeFileSync(
        join(extra, name, "config.pbtxt"),
        `name: "${name}"
backend: "operon_steps"
max_batch_size: 8
input [ { name: "image", data_type: TYPE_STRING, dims: [ 1 ] } ]
output [ { name: "y", data_type: TYPE_UINT8, dims: [ 4, 4, 3 ] } ]
`,
      );
      writeFileSync(join(extra, name, "1/steps.json"), JSON.stringify(steps));
    };
    stepsModel("steps_bad_params", {
      steps: [
        { id: "decode", step: "image.decode" },
        { id: "resize", step: "image.resize", params: { height: 0, width: 4 } },
      ],
    });
    stepsModel("steps_thumbnail", {
      steps: [
        { id: "decode", step: "image.decode" },
        { id: "resize", step: "image.resize", params: { height: 4, width: 4 } },
      ],
    });
    stepsModel("steps_wrong_dims", {
      steps: [
        { id: "decode", step: "image.decode" },
        { id: "resize", step: "image.resize", params: { height: 2, width: 2 } },
      ],
    });
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-repository",
      STEPS_REPOSITORY,
      "--model-repository",
      extra,
      "--exit-on-error=false",
      "--strict-readiness=false",
    ]);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it("serves the rebuilt ensemble and its operon_steps models in worker processes", async () => {
    const index = (await (await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" })).json()) as Array<{
      name: string;
      state: string;
      reason: string;
    }>;
    const row = (name: string) => index.find((entry) => entry.name === name);
    for (const name of ["text_direction_steps", "text_direction_steps_preprocess", "text_direction_steps_topk"]) {
      expect(row(name)?.state, name).toBe("READY");
    }
    const instances = workerProcesses(server.pid).map((worker) => worker.instance);
    expect(instances).toContain("text_direction_steps_preprocess_0_0");
    expect(instances).toContain("text_direction_steps_topk_0_0");
  });

  it("answers the same labels and scores (1e-5) as the hand-written text_direction, batched and alone", async () => {
    const original = await classify(server, FILES, "text_direction");
    const rebuilt = await classify(server, FILES, "text_direction_steps");
    expect([original.status, rebuilt.status]).toEqual([200, 200]);
    const labels = bytesElements(output(rebuilt.outputs, "label").data);
    expect(labels).toEqual(bytesElements(output(original.outputs, "label").data));
    expect(labels).toEqual(["0°", "180°", "0°"]);
    const scores = floats(output(rebuilt.outputs, "score").data);
    expect(worst(scores, floats(output(original.outputs, "score").data))).toBeLessThanOrEqual(1e-5);
    for (const [i, file] of FILES.entries()) {
      const alone = await classify(server, [file], "text_direction_steps");
      expect(bytesElements(output(alone.outputs, "label").data)).toEqual([labels[i]]);
      expect(worst(floats(output(alone.outputs, "score").data), [scores[i]!])).toBeLessThanOrEqual(1e-5);
    }
  });

  it("preprocesses to the same classifier input as the TypeScript step (1e-6), padding included", async () => {
    const original = await classify(server, FILES, "text_direction_preprocess");
    const rebuilt = await classify(server, FILES, "text_direction_steps_preprocess");
    const x = output(rebuilt.outputs, "x");
    expect([x.datatype, x.shape]).toEqual(["FP32", [3, 3, 48, 192]]);
    expect(worst(floats(x.data), floats(output(original.outputs, "x").data))).toBeLessThanOrEqual(1e-6);
  });

  it("fails only the bad image's request, naming the element, the step and the problem", async () => {
    const bad = await classify(server, [FILES[0]!, Buffer.from("this is not an image")], "text_direction_steps");
    expect(bad.status).toBe(400);
    expect(bad.error).toMatch(
      /text_direction_steps_preprocess.*element 1 of 2: step 'decode' \(image\.decode\): input 'image' is not a readable image \(20 bytes/,
    );
    const good = await classify(server, [FILES[1]!], "text_direction_steps");
    expect(bytesElements(output(good.outputs, "label").data)).toEqual(["180°"]);
  });

  it("refuses a steps.json with a bad parameter at load, naming the step and the field", async () => {
    const index = (await (await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" })).json()) as Array<{
      name: string;
      state: string;
      reason: string;
    }>;
    const row = index.find((entry) => entry.name === "steps_bad_params");
    expect(row?.state).toBe("UNAVAILABLE");
    expect(row?.reason).toMatch(/step 2 'resize' \(image\.resize\): params\.height must be an integer >= 1/);
    // The other steps model of that repository serves.
    const thumb = await classify(server, [FILES[0]!, FILES[2]!], "steps_thumbnail");
    expect(thumb.status).toBe(200);
    expect(output(thumb.outputs, "y").shape).toEqual([2, 4, 4, 3]);
  });

  it("refuses to answer a tensor of other dims than its config declares, naming both", async () => {
    const wrong = await classify(server, [FILES[0]!], "steps_wrong_dims");
    expect(wrong.status).toBe(400);
    expect(wrong.error).toMatch(/output 'y' has shape \[2, 2, 3\] but the model config declares dims \[4, 4, 3\]/);
  });
});
