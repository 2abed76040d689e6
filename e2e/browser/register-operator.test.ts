import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: chain add_sub twice into an operator (Y = A + 2B) in the
// console's editor, watching the graph and the gateway's validation as they
// type, save it, and try it. The tests run in order on one server.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "operators-admin@example.com", password: "a long enough passphrase" };
const OPERATOR = "add_twice_e2e";

/** The editor's graph: React Flow draws one element per node. */
function graphNodes(page: Page) {
  return page.locator(".operator-graph .react-flow__node");
}

/** The spec editor (CodeMirror 6: a contenteditable named "Spec (JSON)"). */
function specEditor(page: Page) {
  return page.getByRole("textbox", { name: "Spec (JSON)" });
}

/** The editor's text, as the form holds it. */
function specText(page: Page): Promise<string> {
  return page.locator('form input[type="hidden"][name="spec"]').inputValue();
}

function validation(page: Page) {
  return page.getByRole("region", { name: "Validation" });
}

describe("console: register an operator", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("lists the repository's ensembles read-only and opens the editor with a two-step example drawn as a graph", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Operators" }).click();
    await visible(heading(page, "Operators"));
    const ensemble = await visible(
      page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: /^text_direction\b/ }) }),
    );
    expect(await ensemble.textContent()).toContain("Repository ensemble");
    expect(await ensemble.getByRole("button", { name: /Delete/ }).count()).toBe(0);

    await page.getByRole("link", { name: "New operator" }).click();
    await waitForPath(page, "/operators/new");
    await visible(heading(page, "New operator"));
    await page.getByLabel("Name", { exact: true }).fill(OPERATOR);
    const spec = JSON.parse(await specText(page)) as { steps: Array<{ model: string }> };
    expect(spec.steps.map((step) => step.model)).toEqual(["add_sub", "add_sub"]);

    await visible(validation(page).getByText("No problems"), 20_000);
    // Inputs A and B, steps first and second, output Y.
    await visible(graphNodes(page));
    expect(await graphNodes(page).count()).toBe(5);
    expect(await page.locator(".operator-graph figcaption").textContent()).toContain(
      "5 nodes (2 inputs, 2 model steps, 1 output) and 5 edges",
    );
    expect(await page.locator(".operator-graph .react-flow__edge").count()).toBe(5);
    expect(await page.locator(".operator-graph .react-flow__edge-text").allTextContents()).toEqual(
      expect.arrayContaining(["sum → INPUT0", "A → INPUT0"]),
    );
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("complains about an unknown model while editing, marks its step, and redraws as the spec changes", async () => {
    const { page } = system.session;
    const original = await specText(page);
    const last = original.lastIndexOf('"model": "add_sub"');
    await specEditor(page).fill(
      `${original.slice(0, last)}"model": "no_such_model"${original.slice(last + '"model": "add_sub"'.length)}`,
    );

    const problem = await visible(validation(page).getByRole("listitem").filter({ hasText: "no_such_model" }));
    expect(await problem.textContent()).toMatch(/step 'second': model 'no_such_model' .*is not served/);
    const marked = page.locator(".operator-graph .react-flow__node.graph-node-problem");
    await visible(marked);
    expect(await marked.count()).toBe(1);
    expect(await marked.textContent()).toContain("second");
    expect(await marked.textContent()).toContain("model no_such_model");

    // Broken JSON keeps the last graph and says where the JSON breaks.
    await specEditor(page).fill(original.replace(/\}\s*$/, ""));
    await visible(validation(page).getByText(/Not valid JSON/));
    // The CodeMirror editor marks the JSON error itself, in its gutter.
    await visible(page.locator(".spec-code-editor .cm-gutter-lint .cm-lint-marker-error"));
    expect(await graphNodes(page).count()).toBe(5);

    // Back to the example: valid again, nothing marked.
    await specEditor(page).fill(original);
    await visible(validation(page).getByText("No problems"));
    expect(await marked.count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("completes step kinds from the spec's schema and model names from the gateway, and marks a bad step's line", async () => {
    const { page } = system.session;
    const original = await specText(page);
    const completions = page.locator(".spec-code-editor .cm-tooltip-autocomplete .cm-completionLabel");

    // The gateway's problem with a step lands on that step's line, in the gutter and on the field.
    const last = original.lastIndexOf('"model": "add_sub"');
    await specEditor(page).fill(
      `${original.slice(0, last)}"model": "no_such_model"${original.slice(last + '"model": "add_sub"'.length)}`,
    );
    await visible(validation(page).getByRole("listitem").filter({ hasText: "no_such_model" }));
    const marker = await visible(page.locator(".spec-code-editor .cm-gutter-lint .cm-lint-marker-error"));
    const markedLine = await visible(
      page.locator(".spec-code-editor .cm-line").filter({ has: page.locator(".cm-lintRange-error") }),
    );
    expect(
      await page
        .locator(".spec-code-editor .cm-line")
        .filter({ has: page.locator(".cm-lintRange-error") })
        .count(),
    ).toBe(1);
    expect(await markedLine.locator(".cm-lintRange-error").textContent()).toBe('"model": "no_such_model"');
    // The gutter's marker sits on that line (the one step 'second' names its model on).
    const [markerBox, lineBox] = [await marker.boundingBox(), await markedLine.boundingBox()];
    expect(Math.abs(markerBox!.y + markerBox!.height / 2 - (lineBox!.y + lineBox!.height / 2))).toBeLessThan(
      lineBox!.height / 2,
    );

    // Typing a step's kind offers the schema's kinds; its model, the served models.
    await specEditor(page).fill('{\n  "steps": [\n    { "id": "third", ');
    await page.keyboard.press("Escape");
    await page.keyboard.type('"kind": "');
    await visible(completions.first());
    expect(await completions.allTextContents()).toEqual(["model", "route", "exit"]);
    await page.waitForTimeout(150);
    await page.keyboard.press("Enter");
    await page.keyboard.type('", "model": "');
    await visible(completions.filter({ hasText: /^add_sub$/ }));
    expect(await completions.allTextContents()).not.toContain("model");
    // CodeMirror ignores Enter for 75 ms after the list opens (its interactionDelay), against accidental picks.
    await page.waitForTimeout(150);
    await page.keyboard.press("Enter");
    expect(await specText(page)).toContain('{ "id": "third", "kind": "model", "model": "add_sub"');

    await specEditor(page).fill(original);
    await visible(validation(page).getByText("No problems"));
    expect(await page.locator(".spec-code-editor .cm-lintRange-error").count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("saves the operator and opens its page with the graph, its first version and its step's circuit breaker", async () => {
    const { page } = system.session;
    // Step 'second' gets a circuit breaker (issue 25): the page shows its state as the gateway holds it.
    const spec = JSON.parse(await specText(page)) as { steps: Array<Record<string, unknown>> };
    spec.steps[1]!["circuitBreaker"] = { failureThreshold: 3 };
    await specEditor(page).fill(JSON.stringify(spec, null, 2));
    await visible(validation(page).getByText("No problems"), 20_000);
    await page.getByRole("button", { name: "Create operator" }).click();
    await waitForPath(page, `/operators/${OPERATOR}`);
    await visible(heading(page, OPERATOR));
    await visible(graphNodes(page));
    expect(await graphNodes(page).count()).toBe(5);
    const facts = page.getByRole("region", { name: "About" });
    expect(await facts.textContent()).toContain("Served");
    expect(await facts.textContent()).toContain("add_sub");
    await visible(page.getByRole("region", { name: "Versions" }).getByText("Version 1"));
    // Its capacity as the resource scheduler counts it: both steps call add_sub (two calls per request), so
    // each carries half of add_sub's instances' throughput and both are the bottleneck.
    const capacity = page.getByRole("region", { name: "Capacity" });
    await visible(capacity.getByRole("table", { name: "Capacity per step" }));
    const text = (await capacity.textContent()) ?? "";
    expect(text).toMatch(/Capacity[\d.,\s]+req\/s/);
    expect(text).toContain("Bottleneck step");
    expect(await capacity.getByRole("row").filter({ hasText: "bottleneck" }).count()).toBe(2);
    // Only step 'second' has a breaker, and nothing failed: closed.
    const breakers = await visible(page.getByRole("region", { name: "Circuit breakers" }));
    const breakerFacts = breakers.locator(".fact");
    expect(await breakerFacts.count()).toBe(1);
    expect(await breakerFacts.locator("dt").textContent()).toBe("Step second");
    expect(await breakerFacts.locator("dd").textContent()).toBe("Closed");
    expect(await breakerFacts.locator("dd .status-breaker-closed").count()).toBe(1);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("tries it: Y = A + 2B, with each step's time and outputs", async () => {
    const { page } = system.session;
    const form = await visible(page.getByRole("form", { name: `Try ${OPERATOR}` }));
    const inputsField = form.getByLabel("Inputs (KServe v2 JSON tensors)");
    const prefilled = JSON.parse(await inputsField.inputValue()) as Array<{
      name: string;
      datatype: string;
      shape: number[];
    }>;
    expect(prefilled.map((input) => [input.name, input.shape])).toEqual([
      ["A", [1, 16]],
      ["B", [1, 16]],
    ]);
    // A and B differ (and are exact in FP32), so a step that mixed them up would show.
    const a = Array.from({ length: 16 }, (_, i) => i / 2 - 3);
    const b = Array.from({ length: 16 }, (_, i) => 16 - i);
    await inputsField.fill(
      `[\n  ${JSON.stringify({ ...prefilled[0], data: a })},\n  ${JSON.stringify({ ...prefilled[1], data: b })}\n]`,
    );
    await form.getByRole("button", { name: "Run" }).click();

    const result = await visible(page.getByRole("region", { name: "Result" }));
    const valuesOf = async (row: Locator): Promise<number[]> =>
      JSON.parse((await row.locator("code.tensor-data").textContent()) ?? "") as number[];
    const row = await visible(
      result.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "Y", exact: true }) }),
    );
    const sum = a.map((value, i) => value + b[i]!);
    const y = sum.map((value, i) => value + b[i]!);
    expect(await valuesOf(row)).toEqual(y);

    const steps = result.getByRole("figure", { name: "Steps: time (ms) and outputs" }).getByRole("listitem");
    expect(await steps.count()).toBe(2);
    const texts = await steps.allTextContents();
    expect(texts[0]).toMatch(/^first.*ok.*start [\d.]+ ms, duration [\d.]+ ms/);
    expect(texts[1]).toMatch(/^second.*ok.*start [\d.]+ ms, duration [\d.]+ ms/);

    // Each step's outputs fold out under its time: first's sum = A + B, second's Y = sum + B.
    for (const [index, step, tensor, expected] of [
      [0, "first", "sum", sum],
      [1, "second", "Y", y],
    ] as const) {
      await steps.nth(index).locator("summary").click();
      const table = await visible(steps.nth(index).getByRole("table", { name: `Outputs of step ${step}` }));
      const tensorRow = table
        .getByRole("row")
        .filter({ has: page.getByRole("rowheader", { name: tensor, exact: true }) });
      expect(await tensorRow.getByRole("cell").allTextContents()).toEqual([
        "FP32",
        "[1, 16]",
        expect.stringMatching(/^argmax \d+top 5: /),
        expect.any(String),
        "Download JSON",
      ]);
      expect(await valuesOf(tensorRow)).toEqual(expected);
    }
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("switches try-it to a form per declared input, carrying the JSON's values over, and runs it through the form", async () => {
    const { page } = system.session;
    const form = await visible(page.getByRole("form", { name: `Try ${OPERATOR}` }));
    const carried = JSON.parse(await form.getByLabel("Inputs (KServe v2 JSON tensors)").inputValue()) as Array<{
      data: number[];
    }>;
    await form.getByRole("radio", { name: "Form" }).check();
    const dataOf = (input: string) =>
      form.getByRole("group", { name: `Input “${input}”` }).getByLabel("Data (JSON array, row-major)");
    await visible(dataOf("A"));
    expect(await form.getByLabel("Inputs (KServe v2 JSON tensors)").count()).toBe(0);
    expect(JSON.parse(await dataOf("A").inputValue())).toEqual(carried[0]!.data);
    expect(await form.getByRole("group", { name: "Input “B”" }).getByLabel("Shape").inputValue()).toMatch(
      /^\[?1, 16\]?$/,
    );

    const a = Array.from({ length: 16 }, (_, i) => i * 3);
    const b = Array.from({ length: 16 }, (_, i) => 100 - i);
    await dataOf("A").fill(JSON.stringify(a));
    await dataOf("B").fill(JSON.stringify(b));
    await form.getByRole("button", { name: "Run" }).click();
    const result = page.getByRole("region", { name: "Result" });
    const row = result.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "Y", exact: true }) });
    const expected = a.map((value, i) => value + 2 * b[i]!).join(", ");
    await visible(row.locator("code.tensor-data").filter({ hasText: expected }));

    // And back: the JSON now holds what the form sent.
    await form.getByRole("radio", { name: "JSON" }).check();
    const sent = JSON.parse(await form.getByLabel("Inputs (KServe v2 JSON tensors)").inputValue()) as Array<{
      name: string;
      data: number[];
    }>;
    expect(sent.map((input) => [input.name, input.data])).toEqual([
      ["A", a],
      ["B", b],
    ]);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("deletes the operator after confirming", async () => {
    const { page } = system.session;
    await page.getByRole("button", { name: `Delete operator ${OPERATOR}` }).click();
    const dialog = await visible(page.getByRole("dialog", { name: `Delete operator “${OPERATOR}”?` }));
    await dialog.getByRole("button", { name: "Delete operator" }).click();
    await waitForPath(page, "/operators");
    await visible(heading(page, "Operators"));
    await page.getByRole("rowheader", { name: OPERATOR }).waitFor({ state: "detached" });
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
