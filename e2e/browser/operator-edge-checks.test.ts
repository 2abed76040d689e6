import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task (issue 21, the operator editor): pick steps and models
// from one palette into the spec, and see a connection whose ends disagree on
// datatype or shape marked on its edge in the graph, with the mismatch written
// there, before saving anything. The tests run in order on one server.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "edge-checks-admin@example.com", password: "a long enough passphrase" };

/** The editor's starting spec (example-spec.ts): Y = A + 2B over add_sub, batching up to 8. */
const SPEC = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "sum" } },
    {
      id: "second",
      kind: "model",
      model: "add_sub",
      inputs: { INPUT0: "sum", INPUT1: "B" },
      outputs: { OUTPUT0: "Y" },
    },
  ],
};

function specEditor(page: Page) {
  return page.getByRole("textbox", { name: "Spec (JSON)" });
}

function specText(page: Page): Promise<string> {
  return page.locator('form input[type="hidden"][name="spec"]').inputValue();
}

function validation(page: Page) {
  return page.getByRole("region", { name: "Validation" });
}

const problemEdges = (page: Page) => page.locator(".operator-graph .react-flow__edge.graph-edge-problem");

describe("console: the operator editor's palette and edge checks", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("lists steps and models in one palette and adds the picked one to the spec as a step", async () => {
    const { page } = system.session;
    await page.goto("/operators/new");
    await visible(heading(page, "New operator"));
    await visible(validation(page).getByText("No problems"), 20_000);
    const palette = page.getByRole("region", { name: "Steps and models" });
    const picker = palette.getByLabel("Step or model");
    // Grouped: the example repository's models under "Models" (step models and custom steps get their own groups).
    await picker.locator('optgroup[label="Models"] option', { hasText: /^add_sub$/ }).waitFor({ state: "attached" });
    expect(await picker.locator('optgroup[label="Models"] option').allTextContents()).toEqual(
      expect.arrayContaining(["add_sub", "text_direction_classifier"]),
    );
    await picker.selectOption("add_sub");
    await visible(palette.getByText("INPUT0"));
    await palette.getByRole("button", { name: "Add add_sub to the spec" }).click();
    const spec = JSON.parse(await specText(page)) as typeof SPEC;
    expect(spec.steps.map((step) => step.id)).toEqual(["first", "second", "add_sub"]);
    expect(spec.steps[2]).toEqual({
      id: "add_sub",
      kind: "model",
      model: "add_sub",
      inputs: { INPUT0: "INPUT0", INPUT1: "INPUT1" },
      outputs: { OUTPUT0: "OUTPUT0", OUTPUT1: "OUTPUT1" },
    });
    // Its node is drawn at once; the gateway then says its inputs are not wired yet.
    await visible(page.locator(".operator-graph .react-flow__node", { hasText: "model add_sub" }).nth(2));
    await visible(
      validation(page)
        .getByText(/tensor 'INPUT0'|INPUT0/)
        .first(),
    );
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("marks a datatype mismatch on its edge before saving, axe-clean in both schemes", async () => {
    const { page } = system.session;
    const mismatched = structuredClone(SPEC);
    mismatched.inputs[0]!.datatype = "INT32";
    await specEditor(page).fill(JSON.stringify(mismatched, null, 2));
    const edge = await visible(problemEdges(page), 20_000);
    expect(await problemEdges(page).count()).toBe(1);
    // A → first's INPUT0: the operator gives INT32 where add_sub takes FP32, written on that edge.
    expect(await edge.locator(".react-flow__edge-text").textContent()).toBe("A → INPUT0 ⚠ datatype INT32 → FP32");
    expect(await page.locator(".operator-graph figcaption").textContent()).toContain(
      "1 connection does not match in datatype or shape.",
    );
    await visible(validation(page).getByText(/datatype INT32 does not match FP32/));
    // Nothing was saved: still the new-operator form.
    expect(new URL(page.url()).pathname).toBe("/operators/new");
    for (const scheme of ["dark", "light"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      expect(await accessibilityViolations(page), `axe in the ${scheme} scheme`).toEqual([]);
    }
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("marks shape mismatches on each edge they are on, and clears them once the spec is right", async () => {
    const { page } = system.session;
    const mismatched = structuredClone(SPEC);
    mismatched.inputs[1]!.dims = [8];
    await specEditor(page).fill(JSON.stringify(mismatched, null, 2));
    await visible(problemEdges(page).nth(1), 20_000);
    // B feeds both steps' INPUT1: two edges, each with its own mismatch (the batch dimension is -1).
    expect(await problemEdges(page).locator(".react-flow__edge-text").allTextContents()).toEqual([
      "B → INPUT1 ⚠ shape [-1,8] → [-1,16]",
      "B → INPUT1 ⚠ shape [-1,8] → [-1,16]",
    ]);
    await specEditor(page).fill(JSON.stringify(SPEC, null, 2));
    await visible(validation(page).getByText("No problems"), 20_000);
    expect(await problemEdges(page).count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
