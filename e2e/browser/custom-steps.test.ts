import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: upload a custom TypeScript step from the console, see
// its compile errors at model.ts:line:col, fix it, try the stored step (which
// runs sandboxed) on its page, and use it in an operator. The tests run in order.
const ADMIN = { email: "custom-steps-admin@example.com", password: "a long enough passphrase" };

const BROKEN_TS = `export default class Broken {
  execute(requests: number[]) {
    const count: string = requests.length;
    return count;
  }
}
`;
const SCALE_TS = `import { readFileSync } from "node:fs";
import type { DeclaredSignature, ExecuteContext, TypedRequest } from "@operon/backend-api/typescript-model-api";

export const operonSignature: DeclaredSignature = {
  inputs: [{ name: "x", datatype: "FP32", dims: [4] }],
  outputs: [{ name: "y", datatype: "FP32", dims: [4] }],
};

export default class Scale {
  private factor = Number(readFileSync(new URL("./factor.txt", import.meta.url), "utf8"));
  execute(requests: TypedRequest[], ctx: ExecuteContext) {
    return requests.map((request) => {
      const x = request.input("x");
      return { outputs: [ctx.tensor.float32("y", x.shape, x.toFloat32Array().map((v) => v * this.factor))] };
    });
  }
}
`;

function fileOf(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "operon-e2e-custom-step-")), name);
  writeFileSync(path, text);
  return path;
}

describe("console: upload a custom step", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("shows the upload form (axe clean in both themes) and compile errors at model.ts:line:col", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("link", { name: "Upload custom step" }).click();
    await waitForPath(page, "/models/custom-step");
    await visible(heading(page, "Upload a custom step"));
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      expect(await accessibilityViolations(page), scheme).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });

    await page.getByLabel("Name", { exact: true }).fill("custom_broken");
    await page.getByLabel("Code (model.ts)").setInputFiles(fileOf("model.ts", BROKEN_TS));
    await visible(page.getByText(/model\.ts \(\d+ bytes\)/));
    // Checked as soon as it is picked, before any upload; then refused by the upload itself.
    const early = await visible(page.getByRole("list", { name: "model.ts problems" }), 60_000);
    expect(await early.textContent()).toContain("model.ts:3:11 Type 'number' is not assignable to type 'string'.");
    await page.getByRole("button", { name: "Upload custom step" }).click();
    const problems = await visible(page.getByRole("list", { name: "Problems", exact: true }));
    expect(await problems.textContent()).toContain("model.ts:3:11 Type 'number' is not assignable to type 'string'.");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await accessibilityViolations(page), "dark, with problems").toEqual([]);
    await page.emulateMedia({ colorScheme: "light" });
    expect(system.session.errors).toEqual([]);
  }, 90_000);

  it("stores a step that compiles, READY on its page, where it is tried, and it serves in an operator", async () => {
    const { page } = system.session;
    await page.goto(`${system.operon.consoleUrl}/models/custom-step`);
    await visible(heading(page, "Upload a custom step"));
    await page.getByLabel("Name", { exact: true }).fill("custom_scale");
    // The form starts with placeholder tensors; picking model.ts checks it and prefills the ones it declares.
    await page.getByLabel("Inputs (JSON)").fill("[]");
    await page.getByLabel("Code (model.ts)").setInputFiles(fileOf("scale.ts", SCALE_TS));
    await visible(page.getByText("model.ts compiles."), 60_000);
    await visible(page.getByText(/prefilled from its operonSignature/));
    expect(JSON.parse(await page.getByLabel("Inputs (JSON)").inputValue())).toEqual([
      { name: "x", datatype: "FP32", dims: [4] },
    ]);
    await page.getByLabel("Files it reads (labels, vocabularies)").setInputFiles(fileOf("factor.txt", "3"));
    await visible(page.getByText(/factor\.txt \(1 bytes\)/));
    await page.getByRole("button", { name: "Upload custom step" }).click();
    await waitForPath(page, "/models/custom_scale", 90_000);
    await visible(page.getByText("READY").first(), 60_000);
    expect(await accessibilityViolations(page)).toEqual([]);

    // Tried in the browser: the model page's try-it panel, prefilled from its tensors.
    const panel = await visible(page.getByRole("form", { name: "Try custom_scale" }));
    const input = panel.getByRole("group", { name: "Input “x”" });
    await input.getByLabel("Data (JSON array, row-major)").fill("[1, 2, 3, 4]");
    await panel.getByRole("button", { name: "Run" }).click();
    const outputs = await visible(panel.getByRole("table", { name: "Outputs" }));
    const y = outputs.getByRole("row", { name: /^y / }).locator("code");
    expect(JSON.parse((await y.textContent()) ?? "")).toEqual([3, 6, 9, 12]);

    // Used in an operator (as the operator editor saves it): the step twice, x 9.
    const api = await signedInApiSession(system.operon, ADMIN);
    await api.client.operators.create.mutate({
      name: "custom_scale_twice",
      spec: {
        inputs: [{ name: "x", datatype: "FP32", dims: [4] }],
        outputs: [{ name: "y", datatype: "FP32", dims: [4] }],
        steps: [
          { id: "first", kind: "model", model: "custom_scale", inputs: { x: "x" }, outputs: { y: "once" } },
          { id: "second", kind: "model", model: "custom_scale", inputs: { x: "once" }, outputs: { y: "y" } },
        ],
      },
    });
    const key = await createInferKey(api, "custom-step-e2e");
    const response = await fetch(`${system.operon.httpUrl}/v2/models/custom_scale/infer`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ inputs: [{ name: "x", datatype: "FP32", shape: [4], data: [1, 2, 3, 4] }] }),
    });
    const body = (await response.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
    expect(body.error).toBeUndefined();
    expect(body.outputs?.[0]?.data).toEqual([3, 6, 9, 12]);
    const twice = await fetch(`${system.operon.httpUrl}/v2/models/custom_scale_twice/infer`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ inputs: [{ name: "x", datatype: "FP32", shape: [4], data: [1, 2, 3, 4] }] }),
    });
    const chained = (await twice.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
    expect(chained.error).toBeUndefined();
    expect(chained.outputs?.[0]?.data).toEqual([9, 18, 27, 36]);

    // Its next version, from its page: a broken one is refused at model.ts:line:col with nothing stored, then
    // factor 5 serves in place of 3 (the operator calls the served version: 25×).
    const form = await visible(page.getByRole("form", { name: "New version of custom_scale" }));
    await form.getByLabel("New code (model.ts)").setInputFiles(fileOf("model.ts", BROKEN_TS));
    await visible(form.getByText(/model\.ts \(\d+ bytes\)/));
    await form.getByRole("button", { name: "Upload new version" }).click();
    const refused = await visible(form.getByRole("list", { name: "Problems" }), 60_000);
    expect(await refused.textContent()).toContain("model.ts:3:11 Type 'number' is not assignable to type 'string'.");
    await form.getByLabel("New code (model.ts)").setInputFiles(fileOf("scale.ts", SCALE_TS));
    await form.getByLabel("Files the new version reads").setInputFiles(fileOf("factor.txt", "5"));
    await visible(form.getByText(/factor\.txt \(1 bytes\)/));
    await form.getByRole("button", { name: "Upload new version" }).click();
    await visible(form.getByText("Version 2 is READY."), 90_000);
    await visible(page.getByRole("table", { name: "Versions" }).getByRole("row", { name: /^2 / }), 30_000);
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      expect(await accessibilityViolations(page), `new version, ${scheme}`).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });
    const fifth = await fetch(`${system.operon.httpUrl}/v2/models/custom_scale_twice/infer`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ inputs: [{ name: "x", datatype: "FP32", shape: [4], data: [1, 2, 3, 4] }] }),
    });
    expect(((await fifth.json()) as { outputs?: Array<{ data: number[] }> }).outputs?.[0]?.data).toEqual([
      25, 50, 75, 100,
    ]);

    // The system is shared with other specs: leave nothing behind.
    await api.client.operators.delete.mutate({ name: "custom_scale_twice" });
    await api.client.models.delete.mutate({ name: "custom_scale" });
    expect(system.session.errors).toEqual([]);
  }, 150_000);
});
