import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task (issue 21, the operator editor): give an operator's
// route its branches and its early exit its answer in the graph editor,
// from the keyboard, without touching the JSON: the edges appear in the
// graph and in the Connections list, the validation agrees, a branch can be
// removed and added again, and the saved operator takes the branch it was
// given. Its own admin: the spec runs on the shared system.
const ADMIN = { email: "branch-edges-admin@example.com", password: "a long enough passphrase" };
const OPERATOR = "branches_e2e";
const SPEC_FILE = fileURLToPath(import.meta.url);

/**
 * An exit on B < 0 with no answer yet, and a route on A with one case and
 * no branches: both model steps publish Y, which is right only once the
 * route runs them on different branches.
 */
const UNBRANCHED = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "gate", kind: "exit", input: "B", when: { lessThan: 0 }, outputs: {} },
    { id: "pick", kind: "route", input: "A", cases: [{ when: { greaterThan: 10 }, next: [] }] },
    { id: "big", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "Y" } },
    { id: "small", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "A" }, outputs: { OUTPUT0: "Y" } },
  ],
};

type Step = Record<string, unknown> & { id: string };

async function specStep(page: Page, id: string): Promise<Step | undefined> {
  const text = await page.locator('form input[type="hidden"][name="spec"]').inputValue();
  return (JSON.parse(text) as { steps: Step[] }).steps.find((step) => step.id === id);
}

const validation = (page: Page) => page.getByRole("region", { name: "Validation" });
const graphStatus = (page: Page) => page.locator(".operator-graph").getByRole("status");
const edgesOf = (page: Page, kind: "branch" | "answer") =>
  page.locator(`.operator-graph .react-flow__edge.graph-edge-${kind}`);
const branchForm = (page: Page) => page.getByRole("group", { name: "Add a branch" });
const exitForm = (page: Page) => page.getByRole("group", { name: "Set an exit's answer" });

/** Picks an option of a select that has the keyboard focus (a native select: arrow keys or typing pick the same). */
async function choose(page: Page, select: ReturnType<Page["getByLabel"]>, option: string): Promise<void> {
  await select.focus();
  await select.selectOption({ label: option });
  expect(await select.evaluate((element) => element === document.activeElement)).toBe(true);
}

async function addBranch(page: Page, branch: string, step: string): Promise<void> {
  const form = branchForm(page);
  await choose(page, form.getByLabel("Route"), "pick");
  await choose(page, form.getByLabel("Branch"), branch);
  await choose(page, form.getByLabel("Runs step"), step);
  await form.getByRole("button", { name: "Add branch" }).focus();
  await page.keyboard.press("Enter");
}

async function axeInBothSchemes(page: Page, name: string): Promise<void> {
  for (const scheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await saveScreenshot(page, SPEC_FILE, `${name} ${scheme}`);
    expect(await accessibilityViolations(page), `axe in the ${scheme} scheme`).toEqual([]);
  }
}

describe("console: edit an operator's branches and exits in the graph", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("adds a route's branches and an exit's answer from the keyboard, and the graph and the spec follow", async () => {
    const { page } = system.session;
    await page.goto("/operators/new");
    await visible(heading(page, "New operator"));
    await page.getByLabel("Name", { exact: true }).fill(OPERATOR);
    await page.getByRole("textbox", { name: "Spec (JSON)" }).fill(JSON.stringify(UNBRANCHED, null, 2));
    await visible(branchForm(page));
    expect(await edgesOf(page, "branch").count()).toBe(0);
    expect(await edgesOf(page, "answer").count()).toBe(0);

    await addBranch(page, "case 1: > 10", "big");
    await expect.poll(() => graphStatus(page).textContent()).toBe("Added a branch: route pick runs big on case 1.");
    await addBranch(page, "default", "small");
    await expect
      .poll(() => specStep(page, "pick"))
      .toEqual({
        id: "pick",
        kind: "route",
        input: "A",
        cases: [{ when: { greaterThan: 10 }, next: ["big"] }],
        default: ["small"],
      });

    // The exit's answer: pick the exit and the output, type the tensor, Enter (not the operator form's submit).
    const form = exitForm(page);
    await choose(page, form.getByLabel("Exit"), "gate");
    await choose(page, form.getByLabel("Operator output"), "Y");
    await form.getByLabel("Answered with tensor").fill("A");
    await form.getByLabel("Answered with tensor").press("Enter");
    await expect.poll(async () => (await specStep(page, "gate"))?.["outputs"]).toEqual({ Y: "A" });
    expect(new URL(page.url()).pathname).toBe("/operators/new");
    expect(await graphStatus(page).textContent()).toBe("Exit gate now answers Y with A.");

    // Drawn in the graph (dashed branch and answer edges) and listed under it.
    await expect.poll(() => edgesOf(page, "branch").count()).toBe(2);
    expect(await edgesOf(page, "answer").count()).toBe(1);
    const connections = page.locator(".operator-graph").getByRole("list", { name: "Connections" });
    await visible(connections.getByText("pick to big: > 10"));
    await visible(connections.getByText("gate to Y: exit: A → Y"));
    await visible(validation(page).getByText("No problems"), 20_000);
    await axeInBothSchemes(page, "branches added");
    expect(system.session.errors).toEqual([]);
  }, 120_000);

  it("removes a branch from the Connections list and adds it again, the validation following", async () => {
    const { page } = system.session;
    const connections = page.locator(".operator-graph").getByRole("list", { name: "Connections" });
    const remove = connections.getByRole("button", { name: "Remove the branch pick → small (default)" });
    await remove.focus();
    await page.keyboard.press("Enter");
    await expect.poll(async () => (await specStep(page, "pick"))?.["default"]).toBeUndefined();
    expect(await graphStatus(page).textContent()).toBe("Removed the branch pick → small (default).");
    await expect.poll(() => edgesOf(page, "branch").count()).toBe(1);
    // Both steps publish Y again outside one route's branches: the gateway says so.
    await visible(validation(page).getByText(/small/), 20_000);
    expect(await validation(page).getByText("No problems").count()).toBe(0);

    await addBranch(page, "default", "small");
    await expect.poll(async () => (await specStep(page, "pick"))?.["default"]).toEqual(["small"]);
    await visible(validation(page).getByText("No problems"), 20_000);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("saves the operator, which takes the branch it was given: A > 10 runs big, Y = A + B", async () => {
    const { page } = system.session;
    await page.getByRole("button", { name: "Create operator" }).click();
    await waitForPath(page, `/operators/${OPERATOR}`);
    await visible(heading(page, OPERATOR));
    await visible(
      page.getByRole("region", { name: "Capacity" }).getByRole("table", { name: "Capacity per step" }),
      30_000,
    );
    const form = await visible(page.getByRole("form", { name: `Try ${OPERATOR}` }));
    const inputsField = form.getByLabel("Inputs (KServe v2 JSON tensors)");
    const prefilled = JSON.parse(await inputsField.inputValue()) as Array<{ name: string }>;
    const a = Array.from({ length: 16 }, (_, i) => 20 + i);
    const b = Array.from({ length: 16 }, (_, i) => 0.5 * i);
    await inputsField.fill(
      JSON.stringify([
        { ...prefilled[0], data: a },
        { ...prefilled[1], data: b },
      ]),
    );
    await form.getByRole("button", { name: "Run" }).click();
    const result = await visible(page.getByRole("region", { name: "Result" }), 60_000);
    const row = await visible(
      result.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "Y", exact: true }) }),
    );
    const y = JSON.parse((await row.locator("code.tensor-data").textContent()) ?? "") as number[];
    expect(y).toEqual(a.map((value, i) => value + b[i]!));
    await axeInBothSchemes(page, "saved");
    expect(system.session.errors).toEqual([]);
  }, 120_000);
});
