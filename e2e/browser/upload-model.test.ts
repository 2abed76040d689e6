import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeMlpModel } from "@operon/testing/onnx-model-writer";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { formAlert, heading, visible, waitForPath } from "./support/console-actions.js";
import { writeTinyMlpFile } from "./support/model-files.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: upload an ONNX model from their disk, get its config
// right (the API refuses one that does not fit the model, at the field),
// and see it serve. The tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const MODEL = "tiny-mlp";

describe("console: upload a model and see it serve", () => {
  const system = useSignedInConsole({ admin: ADMIN });
  const file = writeTinyMlpFile(`${MODEL}.onnx`);

  it("cancelling an upload leaves nothing behind", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await visible(heading(page, "Models"));
    await visible(page.getByRole("rowheader", { name: "add_sub" }));
    await page.getByRole("link", { name: "Upload model" }).click();
    await visible(heading(page, "Upload a model"));

    // model.onnx (Triton's file name for every model) names no model: the page asks instead of suggesting "model".
    await page.getByLabel("Model file (.onnx)").setInputFiles(writeTinyMlpFile("model.onnx").path);
    await visible(page.getByText("Selected: model.onnx"));
    expect(await page.getByLabel("Model name").inputValue()).toBe("");
    expect(await page.getByLabel("Model name").evaluate((element) => element === document.activeElement)).toBe(true);
    await visible(page.getByText("“model.onnx” does not say which model it is: name it."));

    await page.getByLabel("Model file (.onnx)").setInputFiles(file.path);
    await visible(page.getByText(`Selected: ${MODEL}.onnx`));
    expect(await page.getByLabel("Model name").inputValue()).toBe(MODEL);
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await visible(heading(page, "Configure"), 60_000);
    // Step two appears below the fold: the page brings it into view and moves focus there.
    await page.waitForFunction(() => document.activeElement?.id === "config-title", undefined, { timeout: 5000 });
    const top = await heading(page, "Configure").evaluate((element) => element.getBoundingClientRect().top);
    expect(top).toBeGreaterThanOrEqual(-1); // scrolled to its top, give or take a subpixel
    expect(top).toBeLessThan(page.viewportSize()!.height / 2);

    await Promise.all([
      page.waitForResponse((response) => response.url().includes("models.upload.abort")),
      page.getByRole("button", { name: "Cancel", exact: true }).click(),
    ]);
    await visible(page.getByText("Upload cancelled: nothing was stored."));
    expect(await heading(page, "Configure").count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  }, 90_000);

  it("sends the file with a progress bar and prefills the config from the model", async () => {
    const { page } = system.session;
    // The file and name stay chosen after a cancel.
    await page.getByRole("button", { name: "Upload", exact: true }).click();

    await visible(heading(page, "Configure"), 60_000);
    // Version 1 again: the cancelled upload no longer holds it.
    const progress = page.getByRole("progressbar", { name: "Upload progress" });
    expect(Number(await progress.getAttribute("value"))).toBe(file.sizeBytes);
    expect(Number(await progress.getAttribute("max"))).toBe(file.sizeBytes);
    expect(await page.getByRole("region", { name: `Version 1 of ${MODEL}` }).textContent()).toContain("100 %");

    const input = page.getByRole("group", { name: "Input “input”" });
    expect(await input.getByLabel("Name").inputValue()).toBe("input");
    expect(await input.getByLabel("Dims").inputValue()).toBe("4");
    expect(await input.getByLabel("Data type").inputValue()).toBe("TYPE_FP32");
    expect(await page.getByRole("group", { name: "Output “output”" }).getByLabel("Name").inputValue()).toBe("output");
    expect(await page.getByLabel("Max batch size").inputValue()).toBe("4");
    expect(await page.getByRole("checkbox", { name: "Dynamic batching" }).isChecked()).toBe(true);
    expect(system.session.errors).toEqual([]);
  }, 90_000);

  it("refuses dims that do not fit the model, at the field", async () => {
    const { page } = system.session;
    const dims = page.getByRole("group", { name: "Input “input”" }).getByLabel("Dims");
    await dims.fill("5");
    // The JSON view follows the form.
    await page.getByText("Advanced: edit JSON").click();
    expect(JSON.parse(await page.getByLabel("Config (JSON)").inputValue()).input[0].dims).toEqual([5]);

    await page.getByRole("button", { name: "Finish upload" }).click();
    const error = await visible(
      page.getByRole("group", { name: "Input “input”" }).getByText("does not match the model's input 'input'"),
    );
    expect(await error.textContent()).toContain("expected [4]");
    expect(await dims.getAttribute("aria-invalid")).toBe("true");
    // Shown at the field, so not repeated as a form alert.
    expect(await formAlert(page).count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("finishes with the fixed config and the model becomes ready", async () => {
    const { page } = system.session;
    await page.getByRole("group", { name: "Input “input”" }).getByLabel("Dims").fill("4");
    await page.getByLabel("Description (optional)").fill("a tiny MLP from the browser test");
    await page.getByRole("button", { name: "Finish upload" }).click();

    await waitForPath(page, `/models/${MODEL}`, 90_000);
    await visible(heading(page, MODEL));
    await visible(page.getByRole("status").getByText("Ready", { exact: true }), 60_000);
    const version = await visible(page.getByRole("table", { name: "Versions" }).getByRole("row", { name: /^1 / }));
    const text = (await version.textContent()) ?? "";
    expect(text).toContain(file.sha256.slice(0, 12));
    expect(text).toContain(ADMIN.email);
    expect(await page.getByRole("table", { name: "Inputs", exact: true }).textContent()).toContain("[-1, 4]");

    await page.getByRole("link", { name: "All models" }).click();
    const row = await visible(page.getByRole("row", { name: new RegExp(`^${MODEL}`) }));
    expect(await row.textContent()).toMatch(/Uploaded.*Ready/);
    expect(system.session.errors).toEqual([]);
  }, 150_000);

  it("edits the config as config.pbtxt in the code editor, loaded from a file or typed (issue 27 item 9)", async () => {
    const { page } = system.session;
    await page.goto(`/models/${MODEL}`);
    await visible(heading(page, MODEL));
    await page.getByRole("button", { name: "Edit config.pbtxt" }).click();
    const form = await visible(page.getByRole("form", { name: "Edit config.pbtxt" }));
    const editor = form.getByRole("textbox", { name: "config.pbtxt" });
    await visible(editor);
    const stored = await form.locator('input[type="hidden"][name="configPbtxt"]').inputValue();
    expect(stored).toMatch(new RegExp(`^name: "${MODEL}"$`, "m"));
    // The editor passes axe in both schemes.
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const violations = await accessibilityViolations(page);
      expect(violations.map((violation) => `${scheme}: ${violation.rule} ${violation.where.join(", ")}`)).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });

    // A file from disk replaces the text; one that does not parse is refused with its line and column, and kept.
    const broken = `${stored.trimEnd()}\ndimz: [ 4 ]\n`;
    await form.getByLabel("Load a config.pbtxt file (replaces the text below)").setInputFiles({
      name: "config.pbtxt",
      mimeType: "text/plain",
      buffer: Buffer.from(broken),
    });
    await page.waitForFunction(
      (expected) =>
        (document.querySelector('input[name="configPbtxt"]') as HTMLInputElement | null)?.value === expected,
      broken,
    );
    await form.getByRole("button", { name: "Save config.pbtxt" }).click();
    const line = broken.trimEnd().split("\n").length;
    await visible(form.getByText(new RegExp(`^config\\.pbtxt:${line}:1: unknown field 'dimz'`)));
    expect(await editor.getAttribute("aria-invalid")).toBe("true");

    // Typed in the editor: batches of up to 2, not the suggested 4 (not an instance more: the host's --max-instances is 8 × cores).
    expect(stored).toMatch(/^max_batch_size: \d+$/m);
    const edited = stored.replace(/^max_batch_size: \d+$/m, "max_batch_size: 2");
    await editor.fill(edited);
    await form.getByRole("button", { name: "Save config.pbtxt" }).click();
    await visible(page.getByText("Saved: the model was reloaded with the new config."), 90_000);
    expect(await page.getByLabel("Config as config.pbtxt").textContent()).toMatch(/^max_batch_size: 2$/m);
    await visible(page.getByRole("status").getByText("Ready", { exact: true }), 60_000);
    expect(system.session.errors).toEqual([]);
  }, 150_000);

  it("a new version keeps the model's current config; a file identical to the serving version says so (issue 27 item 2)", async () => {
    const { page } = system.session;
    await page.goto("/models/upload");
    await visible(heading(page, "Upload a model"));
    // The very file version 1 serves: said to be identical, and the config shown is the model's (batches of up to 2,
    // as edited above), not the file's suggested 4.
    await page.getByLabel("Model file (.onnx)").setInputFiles(file.path);
    await visible(page.getByText(`Selected: ${MODEL}.onnx`));
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await visible(heading(page, "Configure"), 60_000);
    await visible(
      page.getByText("This file is identical to version 1 (same SHA-256): a new version would serve the same model.", {
        exact: true,
      }),
    );
    const kept =
      /^The model's current config, kept for the new version \(as Triton keeps config\.pbtxt across versions\)\./;
    await visible(page.getByText(kept));
    expect(await page.getByLabel("Max batch size").inputValue()).toBe("2");
    await Promise.all([
      page.waitForResponse((response) => response.url().includes("models.upload.abort")),
      page.getByRole("button", { name: "Cancel", exact: true }).click(),
    ]);
    await visible(page.getByText("Upload cancelled: nothing was stored."));

    // Other weights, the same tensors: not identical, the same kept config, and version 2 serves with it.
    const other = join(mkdtempSync(join(tmpdir(), "operon-e2e-v2-")), `${MODEL}.onnx`);
    writeFileSync(other, writeMlpModel({ sizes: [4, 8, 2], seed: 9 }));
    await page.getByLabel("Model file (.onnx)").setInputFiles(other);
    await visible(page.getByText(`Selected: ${MODEL}.onnx`));
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await visible(heading(page, "Configure"), 60_000);
    await visible(page.getByText(kept));
    expect(await page.getByText(/is identical to version/).count()).toBe(0);
    expect(await page.getByLabel("Max batch size").inputValue()).toBe("2");
    await page.getByRole("button", { name: "Finish upload" }).click();
    await waitForPath(page, `/models/${MODEL}`, 90_000);
    await visible(page.getByRole("table", { name: "Versions" }).getByRole("row", { name: /^2 / }), 60_000);
    expect(await page.getByLabel("Config as config.pbtxt").textContent()).toMatch(/^max_batch_size: 2$/m);
    expect(system.session.errors).toEqual([]);
  }, 240_000);

  it("uploads a Triton model folder (config.pbtxt and two version folders) as one upload (issue 27 item 9)", async () => {
    const { page } = system.session;
    const root = mkdtempSync(join(tmpdir(), "operon-e2e-folder-"));
    const folder = join(root, "folder-mlp");
    // First a folder without its config.pbtxt: every problem is named, nothing is sent.
    mkdirSync(join(folder, "1"), { recursive: true });
    writeFileSync(join(folder, "1", "model.onnx"), writeMlpModel({ sizes: [4, 8, 2], seed: 7 }));
    await page.goto("/models/upload");
    await visible(heading(page, "Upload a model"));
    const form = page.getByRole("form", { name: "Or a Triton model folder" });
    await form.getByLabel("Model folder").setInputFiles(folder);
    await visible(form.getByText("folder-mlp/config.pbtxt is missing: a Triton model folder has one"));

    mkdirSync(join(folder, "2"));
    writeFileSync(join(folder, "2", "model.onnx"), writeMlpModel({ sizes: [4, 8, 2], seed: 8 }));
    writeFileSync(join(folder, "README.md"), "not part of the model\n");
    writeFileSync(
      join(folder, "config.pbtxt"),
      `name: "folder-mlp"
backend: "onnxruntime"
max_batch_size: 3
input [ { name: "input", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "output", data_type: TYPE_FP32, dims: [ 2 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
`,
    );
    await form.getByLabel("Model folder").setInputFiles(folder);
    await visible(
      form.getByText(/^folder-mlp: config\.pbtxt and versions 1 \(model\.onnx, .*\), 2 \(model\.onnx, .*\)\.$/),
    );
    await form.getByRole("button", { name: "Upload folder" }).click();

    await waitForPath(page, "/models/folder-mlp", 120_000);
    await visible(heading(page, "folder-mlp"));
    await visible(page.getByRole("status").getByText("Ready", { exact: true }), 60_000);
    const versions = page.getByRole("table", { name: "Versions" });
    await visible(versions.getByRole("row", { name: /^2 / }));
    await visible(versions.getByRole("row", { name: /^1 / }));
    // The folder's config.pbtxt is the model's: batches of up to 3 (the file alone gets the suggested 4).
    const config = (await page.getByLabel("Config as config.pbtxt").textContent()) ?? "";
    expect(config).toMatch(/^max_batch_size: 3$/m);
    expect(system.session.errors).toEqual([]);
  }, 180_000);
});
