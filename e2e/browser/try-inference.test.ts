import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formAlert, heading, visible } from "./support/console-actions.js";
import { signedInApiSession } from "./support/admin-api.js";
import { useSignedInConsole } from "./support/signed-in-console.js";
import { REPO_ROOT } from "../support/operon-process.js";

// A viewer's (here: the admin's) task: try a model from its page without
// writing a client. add_sub answers INPUT0 + INPUT1 and INPUT0 - INPUT1.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "try-admin@example.com", password: "a long enough passphrase" };
// Halves and small whole numbers: exact in FP32, so the sums compare exactly.
const INPUT0 = Array.from({ length: 16 }, (_, index) => index + 0.5);
const INPUT1 = Array.from({ length: 16 }, (_, index) => 2 * index - 7);
const IMAGE_OPERATOR_SPEC = {
  inputs: [{ name: "image", datatype: "BYTES", dims: [1] }],
  outputs: [{ name: "label", datatype: "BYTES", dims: [1] }],
  maxBatchSize: 8,
  steps: [
    {
      id: "decode",
      kind: "model",
      model: "text_direction_preprocess",
      inputs: { image: "image" },
      outputs: { x: "pixels" },
    },
    {
      id: "classify",
      kind: "model",
      model: "text_direction_classifier",
      inputs: { x: "pixels" },
      outputs: { "softmax_0.tmp_0": "probabilities" },
    },
    {
      id: "pick",
      kind: "model",
      model: "text_direction_topk",
      inputs: { probabilities: "probabilities" },
      outputs: { label: "label" },
    },
  ],
};

describe("console: try a model from its page", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("runs add_sub with the values typed and shows their sum and difference", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("link", { name: "add_sub", exact: true }).click();
    await visible(heading(page, "add_sub"));
    const panel = await visible(page.getByRole("form", { name: "Try add_sub" }));

    const first = panel.getByRole("group", { name: "Input “INPUT0”" });
    const second = panel.getByRole("group", { name: "Input “INPUT1”" });
    // Prefilled from the model's metadata: [-1, 16] as one request of 16 values.
    expect(await first.getByLabel("Datatype").inputValue()).toBe("FP32");
    expect(await first.getByLabel("Shape").inputValue()).toBe("1, 16");
    expect(JSON.parse(await first.getByLabel("Data (JSON array, row-major)").inputValue())).toHaveLength(16);

    await first.getByLabel("Data (JSON array, row-major)").fill(JSON.stringify(INPUT0));
    await second.getByLabel("Data (JSON array, row-major)").fill(JSON.stringify(INPUT1));
    await panel.getByRole("button", { name: "Run" }).click();

    const outputs = await visible(panel.getByRole("table", { name: "Outputs" }));
    const dataOf = async (name: string): Promise<number[]> =>
      JSON.parse(
        (await outputs
          .getByRole("row", { name: new RegExp(`^${name} `) })
          .locator("code")
          .textContent()) ?? "",
      ) as number[];
    expect(await dataOf("OUTPUT0")).toEqual(INPUT0.map((value, index) => value + INPUT1[index]!));
    expect(await dataOf("OUTPUT1")).toEqual(INPUT0.map((value, index) => value - INPUT1[index]!));
    expect(await outputs.getByRole("row", { name: /^OUTPUT0 / }).textContent()).toContain("FP32[1, 16]");
    // A classifier's answer at a glance (issue 27, item 6): OUTPUT0 = 3i - 6.5 peaks at its last index.
    const sum = outputs.getByRole("row", { name: /^OUTPUT0 / });
    expect(await sum.getByRole("cell").nth(2).textContent()).toBe(
      "argmax 15top 5: 15 (38.5), 14 (35.5), 13 (32.5), 12 (29.5), 11 (26.5)",
    );
    // And the whole tensor as a download.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      sum.getByRole("button", { name: "Download JSON of OUTPUT0" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe("OUTPUT0.json");
    const saved = JSON.parse(readFileSync((await download.path())!, "utf8")) as { shape: number[]; data: number[] };
    expect(saved).toMatchObject({ name: "OUTPUT0", datatype: "FP32", shape: [1, 16] });
    expect(saved.data).toEqual(INPUT0.map((value, index) => value + INPUT1[index]!));
    // The console writes every latency one way (formatMs): "3.14 ms", "31.4 ms", "314 ms".
    expect(await panel.getByText(/answered in \d[\d,]*(\.\d+)? ms/).count()).toBe(1);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("checks the values against the shape, and shows the gateway's refusal plainly", async () => {
    const { page } = system.session;
    const panel = page.getByRole("form", { name: "Try add_sub" });
    const first = panel.getByRole("group", { name: "Input “INPUT0”" });
    const second = panel.getByRole("group", { name: "Input “INPUT1”" });

    // Too few values for the shape: said at the field, nothing sent.
    await first.getByLabel("Data (JSON array, row-major)").fill("[1, 2, 3]");
    await panel.getByRole("button", { name: "Run" }).click();
    await visible(first.getByText("the shape holds 16 values; 3 given"));
    // The last run's outputs answered other values: they go, not stay under the new error.
    expect(await panel.getByRole("table", { name: "Outputs" }).count()).toBe(0);
    expect(await panel.getByText(/answered in/).count()).toBe(0);

    // A shape the model does not take: the gateway refuses, and the page says why.
    await first.getByLabel("Shape").fill("1, 3");
    await second.getByLabel("Shape").fill("1, 3");
    await second.getByLabel("Data (JSON array, row-major)").fill("[1, 1, 1]");
    await panel.getByRole("button", { name: "Run" }).click();
    const alert = await visible(formAlert(page));
    expect(await alert.textContent()).toMatch(/^The request failed: .*INPUT0/);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("fills an input with zeros or random values in one click", async () => {
    const { page } = system.session;
    await page.goto("/models/add_sub");
    const panel = await visible(page.getByRole("form", { name: "Try add_sub" }));
    const first = panel.getByRole("group", { name: "Input “INPUT0”" });
    const data = first.getByLabel("Data (JSON array, row-major)");
    await first.getByRole("group", { name: "Fill “INPUT0” with" }).getByRole("button", { name: "Zeros" }).click();
    expect(JSON.parse(await data.inputValue())).toEqual(new Array(16).fill(0));
    await first.getByRole("group", { name: "Fill “INPUT0” with" }).getByRole("button", { name: "Random" }).click();
    const random = JSON.parse(await data.inputValue()) as number[];
    expect(random).toHaveLength(16);
    expect(random.every((value) => value >= 0 && value < 1)).toBe(true);
    expect(new Set(random).size).toBeGreaterThan(1);
    expect(system.session.errors).toEqual([]);
  });

  it("reads a numeric input's values from a picked file (raw FP32, .npy with its shape) and runs on them (issue 27 item 6)", async () => {
    const { page } = system.session;
    await page.goto("/models/add_sub");
    const panel = await visible(page.getByRole("form", { name: "Try add_sub" }));
    const first = panel.getByRole("group", { name: "Input “INPUT0”" });
    const second = panel.getByRole("group", { name: "Input “INPUT1”" });
    const fileLabel = "Or read the values from a file (.npy, .json, or raw little-endian FP32)";
    // Raw little-endian FP32, as tensor.tofile() writes it: 16 values.
    await first.getByLabel(fileLabel).setInputFiles({
      name: "input0.bin",
      mimeType: "application/octet-stream",
      buffer: Buffer.from(new Float32Array(INPUT0).buffer),
    });
    await visible(first.getByText("Read 16 values from input0.bin."));
    expect(JSON.parse(await first.getByLabel("Data (JSON array, row-major)").inputValue())).toEqual(INPUT0);
    // A .npy file as np.save writes it: its shape [1, 16] lands in the Shape field too.
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 16), }";
    header += `${" ".repeat(63 - ((10 + header.length) % 64))}\n`;
    const head = Buffer.alloc(10);
    Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(head);
    head.writeUInt16LE(header.length, 8);
    await second.getByLabel(fileLabel).setInputFiles({
      name: "input1.npy",
      mimeType: "application/octet-stream",
      buffer: Buffer.concat([head, Buffer.from(header), Buffer.from(new Float32Array(INPUT1).buffer)]),
    });
    await visible(second.getByText("Read 16 values from input1.npy (shape 1, 16)."));
    expect(await second.getByLabel("Shape").inputValue()).toBe("1, 16");
    await panel.getByRole("button", { name: "Run" }).click();
    const outputs = await visible(panel.getByRole("table", { name: "Outputs" }), 60_000);
    const sum = JSON.parse(
      (await outputs
        .getByRole("row", { name: /^OUTPUT0 / })
        .locator("code.tensor-data")
        .textContent()) ?? "",
    ) as number[];
    expect(sum).toEqual(INPUT0.map((value, index) => value + INPUT1[index]!));
    // A file that is not whole FP32 values is refused at the field, naming the problem; the values stay.
    await first.getByLabel(fileLabel).setInputFiles({
      name: "odd.bin",
      mimeType: "application/octet-stream",
      buffer: Buffer.alloc(6),
    });
    await visible(first.getByText(/odd\.bin is 6 bytes, not a whole number of FP32 values/));
    expect(JSON.parse(await first.getByLabel("Data (JSON array, row-major)").inputValue())).toEqual(INPUT0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("prefills an image-sized input with zeros, not a ramp, and runs the classifier on them (issue 27 item 6)", async () => {
    const { page } = system.session;
    await page.goto("/models/text_direction_classifier");
    await visible(heading(page, "text_direction_classifier"));
    const panel = await visible(page.getByRole("form", { name: "Try text_direction_classifier" }));
    const x = panel.getByRole("group", { name: "Input “x”" });
    // [-1, 3, 48, 192] as one request: a 48×192 crop of 3 channels, 27,648 values, all zero.
    expect(await x.getByLabel("Shape").inputValue()).toBe("1, 3, 48, 192");
    const values = JSON.parse(await x.getByLabel("Data (JSON array, row-major)").inputValue()) as number[];
    expect(values).toHaveLength(3 * 48 * 192);
    expect(values.every((value) => value === 0)).toBe(true);
    await panel.getByRole("button", { name: "Run" }).click();
    const outputs = await visible(panel.getByRole("table", { name: "Outputs" }), 60_000);
    const probabilities = outputs.getByRole("row", { name: /^softmax_0\.tmp_0 / });
    expect(await probabilities.textContent()).toContain("FP32[1, 2]");
    const answer = JSON.parse((await probabilities.locator("code.tensor-data").textContent()) ?? "") as number[];
    expect(answer).toHaveLength(2);
    expect(answer[0]! + answer[1]!).toBeCloseTo(1, 4);
    expect(system.session.errors).toEqual([]);
  }, 90_000);

  it("sends a PNG picked for a BYTES input as raw bytes: the image pipeline answers in the browser", async () => {
    const { page } = system.session;
    await page.goto("/models/text_direction");
    await visible(heading(page, "text_direction"));
    const panel = await visible(page.getByRole("form", { name: "Try text_direction" }));
    const image = panel.getByRole("group", { name: "Input “image”" });
    // Too large a file is refused at the field, before anything is read or sent.
    await image.getByLabel("File (sent as raw bytes, e.g. a PNG)").setInputFiles({
      name: "huge.png",
      mimeType: "image/png",
      buffer: Buffer.alloc(7 * 1024 * 1024),
    });
    await visible(image.getByText(/^huge\.png is 7(\.0)? MiB; Try it sends files up to 6(\.0)? MiB$/));
    await image
      .getByLabel("File (sent as raw bytes, e.g. a PNG)")
      .setInputFiles(join(REPO_ROOT, "examples/images/text_0.png"));
    await visible(image.getByText("text_0.png"));
    await panel.getByRole("button", { name: "Run" }).click();
    const outputs = await visible(panel.getByRole("table", { name: "Outputs" }));
    const label = outputs.getByRole("row", { name: /^label / });
    expect(await label.locator("code.tensor-data").textContent()).toBe('["0°"]');
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("tries an image pipeline operator with a PNG picked for its BYTES input (issue 27 item 6)", async () => {
    const api = await signedInApiSession(system.operon, ADMIN);
    // The text_direction ensemble's three steps as a console operator: PNG bytes in, the line's direction out.
    await api.client.operators.create.mutate({ name: "direction_op", spec: IMAGE_OPERATOR_SPEC });
    // The system is shared with other specs: leave nothing behind, whether the checks pass or not.
    try {
      await tryDirectionOperator();
    } finally {
      await api.client.operators.delete.mutate({ name: "direction_op" });
    }
    expect(system.session.errors).toEqual([]);
  }, 120_000);

  async function tryDirectionOperator(): Promise<void> {
    const { page } = system.session;
    await page.goto("/operators/direction_op");
    await visible(heading(page, "direction_op"));
    const panel = await visible(page.getByRole("form", { name: "Try direction_op" }));
    // A BYTES input opens as the form, where its file picker is.
    const image = panel.getByRole("group", { name: "Input “image”" });
    await image
      .getByLabel("File (sent as raw bytes, e.g. a PNG)")
      .setInputFiles(join(REPO_ROOT, "examples/images/text_180.png"));
    await visible(image.getByText("text_180.png"));
    await panel.getByRole("button", { name: "Run" }).click();
    // Three models' first requests (the classifier's ONNX session warms up): slow on a loaded CI host.
    // The operator's result shows under its form (in the Try it card), not inside it.
    const outputs = await visible(page.getByRole("table", { name: "Outputs", exact: true }), 60_000);
    expect(
      await outputs
        .getByRole("row", { name: /^label / })
        .locator("code.tensor-data")
        .textContent(),
    ).toBe('["180°"]');
    // Each step's time still shows: the binary request kept the step-timing parameters.
    const steps = page.locator(".timeline-row");
    expect(await steps.count()).toBe(3);
    expect(await steps.nth(1).textContent()).toContain("model text_direction_classifier · ok");
  }

  it("lists a model's tensor names beside the operator editor", async () => {
    const { page } = system.session;
    await page.goto("/operators/new");
    await visible(heading(page, "New operator"));
    await visible(page.getByText(/Ctrl\s*\+\s*Space completes step kinds, model names/));
    const lookup = page.getByRole("region", { name: "Steps and models" });
    await lookup.getByLabel("Step or model").selectOption("text_direction_classifier");
    await visible(lookup.getByText("softmax_0.tmp_0"));
    expect(system.session.errors).toEqual([]);
  });

  it("shows a model's config as config.pbtxt or JSON and downloads config.pbtxt", async () => {
    const { page } = system.session;
    await page.goto("/models/add_sub");
    await visible(heading(page, "add_sub"));
    // Triton's own format first (issue 27, item 9), parseable as protobuf text: name, platform, inputs.
    const pbtxt = await visible(page.getByLabel("Config as config.pbtxt"));
    const text = (await pbtxt.textContent()) ?? "";
    expect(text).toMatch(/^name: "add_sub"$/m);
    expect(text).toMatch(/^input \[/m);
    expect(text).not.toContain('{\n  "name"');
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download config.pbtxt" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe("config.pbtxt");
    expect(readFileSync((await download.path())!, "utf8")).toBe(text);
    await page.getByRole("group", { name: "Show as" }).getByRole("radio", { name: "JSON" }).check();
    expect(JSON.parse((await page.getByLabel("Config JSON").textContent()) ?? "")).toMatchObject({ name: "add_sub" });
    expect(system.session.errors).toEqual([]);
  });
});
