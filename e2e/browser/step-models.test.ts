import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/operon-process.js";
import { accessibilityViolations } from "./support/accessibility.js";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: rebuild the text_direction example's pre- and
// post-processing from built-in steps in the console (no code), then check
// through the gateway that the two step models, chained with the classifier,
// answer what the hand-written text_direction answers. The tests run in order.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const IMAGES = join(REPO_ROOT, "examples/images");

async function addStep(page: Page, step: string, params?: object): Promise<void> {
  const before = await page.locator(".step-list > li").count();
  await page.getByRole("button", { name: `Add ${step}`, exact: true }).click();
  await visible(page.locator(".step-list > li").nth(before));
  if (params !== undefined) {
    await page.locator(".step-list > li").nth(before).locator("textarea").fill(JSON.stringify(params));
  }
}

/** One PNG through the gateway (HTTP binary, an infer key): label and score. */
async function classify(httpUrl: string, key: string, model: string, file: Buffer) {
  const element = Buffer.concat([Buffer.alloc(4), file]);
  element.writeUInt32LE(file.length, 0);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: element.length } }],
    }),
  );
  const response = await fetch(`${httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(header.length),
    },
    body: Buffer.concat([header, element]),
  });
  const body = (await response.json()) as { outputs?: Array<{ name: string; data: unknown[] }>; error?: string };
  if (response.status !== 200) throw new Error(`${model}: ${response.status} ${body.error}`);
  const out = (name: string) => body.outputs!.find((o) => o.name === name)!.data[0];
  return { label: String(out("label")), score: Number(out("score")) };
}

describe("console: build models from steps", () => {
  // Room for the two step models beside every example model (the default budget is 16 instances).
  const system = useSignedInConsole({ admin: ADMIN, extraArgs: ["--max-instances", "32"] });

  it("shows the step library with docs and refuses a bad parameter naming the step and field", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("link", { name: "Build from steps" }).click();
    await waitForPath(page, "/models/steps");
    await visible(heading(page, "Build a model from steps"));
    const library = page.getByRole("region", { name: "Step library" });
    await library.getByText("image.resize", { exact: true }).click();
    await visible(library.getByText(/cv2\.INTER_LINEAR/));
    expect(await accessibilityViolations(page)).toEqual([]);

    await page.getByLabel("Name", { exact: true }).fill("td_steps_bad");
    await addStep(page, "image.decode");
    await addStep(page, "image.resize", { height: 0, width: 192 });
    await page
      .getByLabel("Outputs (JSON)")
      .fill(JSON.stringify([{ name: "y", datatype: "UINT8", dims: [48, 192, 3] }]));
    await page.getByRole("button", { name: "Create step model" }).click();
    const problems = await visible(page.getByRole("list", { name: "Problems" }));
    expect(await problems.textContent()).toContain(
      "step 2 'resize' (image.resize): params.height must be an integer >= 1",
    );
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("builds the text_direction preprocessing from six steps and lands on its page, READY", async () => {
    const { page } = system.session;
    await page.goto(`${system.operon.consoleUrl}/models/steps`);
    await visible(heading(page, "Build a model from steps"));
    await page.getByLabel("Name", { exact: true }).fill("td_steps_pre");
    await addStep(page, "image.decode", { channels: 3 });
    await addStep(page, "image.resize", { height: 48, width: 192, fit: "height" });
    await addStep(page, "image.normalize", { scale: 1 / 255, mean: [0.5], std: [0.5] });
    await addStep(page, "image.swap-rb");
    await addStep(page, "image.layout", { from: "HWC", to: "CHW" });
    // The suggested input is the decoder's: image BYTES [1].
    expect(JSON.parse(await page.getByLabel("Inputs (JSON)").inputValue())).toEqual([
      { name: "image", datatype: "BYTES", dims: [1] },
    ]);
    await addStep(page, "image.pad", { height: 48, width: 192, layout: "CHW" });
    await page.getByLabel("Outputs (JSON)").fill(JSON.stringify([{ name: "y", datatype: "FP32", dims: [3, 48, 192] }]));
    await page.getByRole("button", { name: "Create step model" }).click();
    await waitForPath(page, "/models/td_steps_pre", 60_000);
    await visible(page.getByText("READY").first(), 60_000);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(system.session.errors).toEqual([]);
  }, 120_000);

  it("builds the top-k with a labels file, and the chain answers as the hand-written text_direction", async () => {
    const { page } = system.session;
    await page.goto(`${system.operon.consoleUrl}/models/steps`);
    await visible(heading(page, "Build a model from steps"));
    await page.getByLabel("Name", { exact: true }).fill("td_steps_top");
    await addStep(page, "tensor.topk", { k: 1, labels: "labels.txt" });
    await page
      .getByLabel("Inputs (JSON)")
      .fill(JSON.stringify([{ name: "probabilities", datatype: "FP32", dims: [2] }]));
    await page.getByLabel("Outputs (JSON)").fill(
      JSON.stringify([
        { name: "label", datatype: "BYTES", dims: [1] },
        { name: "score", datatype: "FP32", dims: [1] },
      ]),
    );
    const labels = join(mkdtempSync(join(tmpdir(), "operon-e2e-labels-")), "labels.txt");
    writeFileSync(labels, "0°\n180°\n");
    await page.getByLabel("Files the steps read (labels, tokenizer.json)").setInputFiles(labels);
    await visible(page.getByText(/labels\.txt \(\d+ bytes\)/));
    await page.getByRole("button", { name: "Create step model" }).click();
    await waitForPath(page, "/models/td_steps_top", 60_000);
    await visible(page.getByText("READY").first(), 60_000);

    // Chain them with the classifier (through the API, as the operator editor saves) and compare with text_direction.
    const api = await signedInApiSession(system.operon, ADMIN);
    await api.client.operators.create.mutate({
      name: "td_steps_operator",
      spec: {
        maxBatchSize: 8,
        inputs: [{ name: "image", datatype: "BYTES", dims: [1] }],
        outputs: [
          { name: "label", datatype: "BYTES", dims: [1] },
          { name: "score", datatype: "FP32", dims: [1] },
        ],
        steps: [
          { id: "pre", kind: "model", model: "td_steps_pre", inputs: { image: "image" }, outputs: { y: "x" } },
          {
            id: "cls",
            kind: "model",
            model: "text_direction_classifier",
            inputs: { x: "x" },
            outputs: { "softmax_0.tmp_0": "p" },
          },
          {
            id: "top",
            kind: "model",
            model: "td_steps_top",
            inputs: { probabilities: "p" },
            outputs: { label: "label", score: "score" },
          },
        ],
      },
    });
    const key = await createInferKey(api, "steps-e2e");
    for (const image of ["text_0.png", "text_180.png", "text_grey.png"]) {
      const file = readFileSync(join(IMAGES, image));
      const original = await classify(system.operon.httpUrl, key, "text_direction", file);
      const rebuilt = await classify(system.operon.httpUrl, key, "td_steps_operator", file);
      expect(rebuilt.label, image).toBe(original.label);
      expect(Math.abs(rebuilt.score - original.score), image).toBeLessThanOrEqual(1e-5);
    }
    expect(system.session.errors).toEqual([]);
  }, 120_000);
});
