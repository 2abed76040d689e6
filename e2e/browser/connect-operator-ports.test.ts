import { fileURLToPath } from "node:url";
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { formAlert, heading, visible, waitForPath } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task (issue 21, the operator editor): wire an operator in the
// graph itself, dragging from output ports onto input ports (or picking
// them with the keyboard), see a connection whose ends disagree flagged on
// its edge before saving, fix it there, save, and try it. The tests run in
// order on one server. Its own admin: the spec runs on the shared system
// (e2e/browser/support/README.md).
const ADMIN = { email: "connect-ports-admin@example.com", password: "a long enough passphrase" };
const OPERATOR = "drag_wired_e2e";
const SPEC_FILE = fileURLToPath(import.meta.url);

/**
 * Two add_sub steps with nothing connected, and an optional INT32 input C
 * that does not fit add_sub's FP32 inputs: the mismatch to drop by mistake.
 */
const UNWIRED = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
    { name: "C", datatype: "INT32", dims: [16], optional: true },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: {}, outputs: {} },
    { id: "second", kind: "model", model: "add_sub", inputs: {}, outputs: {} },
  ],
};

type Step = { id: string; inputs: Record<string, string>; outputs: Record<string, string> };

function specEditor(page: Page) {
  return page.getByRole("textbox", { name: "Spec (JSON)" });
}

async function specSteps(page: Page): Promise<Step[]> {
  const text = await page.locator('form input[type="hidden"][name="spec"]').inputValue();
  return (JSON.parse(text) as { steps: Step[] }).steps;
}

function validation(page: Page) {
  return page.getByRole("region", { name: "Validation" });
}

/** A port of a graph node: the React Flow handle ("in:INPUT0" / "out:OUTPUT0") on node "step:first", "in:A", "out:Y". */
function port(page: Page, node: string, handle: string): Locator {
  return page.locator(`.operator-graph .react-flow__handle[data-nodeid="${node}"][data-handleid="${handle}"]`);
}

const problemEdges = (page: Page) => page.locator(".operator-graph .react-flow__edge.graph-edge-problem");
const graphStatus = (page: Page) => page.locator(".operator-graph").getByRole("status");

/** The port's centre once the redrawn graph has stopped moving: the view fits itself again after every edit. */
async function settledCentre(locator: Locator): Promise<{ x: number; y: number }> {
  await visible(locator);
  let last = "";
  for (let attempt = 0; attempt < 40; attempt += 1) {
    const box = await locator.boundingBox();
    if (box !== null) {
      const centre = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
      if (JSON.stringify(centre) === last) return centre;
      last = JSON.stringify(centre);
    }
    await locator.page().waitForTimeout(50);
  }
  throw new Error(`the port ${await locator.getAttribute("data-handleid")} did not settle`);
}

/** A person's drag: press on the output port, move across the canvas, release on the input port. */
async function drag(page: Page, from: Locator, to: Locator): Promise<void> {
  // The gateway's answer to the last edit redraws the graph: drag once it is in, not across the redraw.
  await validation(page).getByText("Checking with the gateway…").waitFor({ state: "hidden", timeout: 20_000 });
  await page.locator(".operator-graph-canvas").scrollIntoViewIfNeeded();
  const start = await settledCentre(from);
  const end = await settledCentre(to);
  await page.mouse.move(start.x, start.y);
  await page.mouse.down();
  await page.mouse.move((start.x + end.x) / 2, (start.y + end.y) / 2 + 20, { steps: 8 });
  await page.mouse.move(end.x, end.y, { steps: 8 });
  await page.mouse.up();
}

async function axeInBothSchemes(page: Page, name: string): Promise<void> {
  for (const scheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await saveScreenshot(page, SPEC_FILE, `${name} ${scheme}`);
    expect(await accessibilityViolations(page), `axe in the ${scheme} scheme`).toEqual([]);
  }
}

describe("console: connect an operator's ports in the graph", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("wires two steps by dragging between ports and flags a mismatched drop on its edge before saving", async () => {
    const { page } = system.session;
    await page.goto("/operators/new");
    await visible(heading(page, "New operator"));
    await page.getByLabel("Name", { exact: true }).fill(OPERATOR);
    await specEditor(page).fill(JSON.stringify(UNWIRED, null, 2));
    // Each step shows its model's ports with datatype and shape (add_sub batches: -1 first).
    const firstInput0 = await visible(port(page, "step:first", "in:INPUT0"));
    await expect.poll(() => firstInput0.textContent(), { timeout: 20_000 }).toBe("INPUT0 FP32 [-1,16]");
    expect(await port(page, "in:C", "out:C").textContent()).toBe("C INT32 [-1,16]");
    expect(await page.locator(".operator-graph .react-flow__edge").count()).toBe(0);

    await drag(page, port(page, "in:A", "out:A"), port(page, "step:first", "in:INPUT0"));
    await expect.poll(async () => (await specSteps(page))[0]!.inputs).toEqual({ INPUT0: "A" });
    await drag(page, port(page, "in:B", "out:B"), port(page, "step:first", "in:INPUT1"));
    await drag(page, port(page, "step:first", "out:OUTPUT0"), port(page, "step:second", "in:INPUT0"));
    await drag(page, port(page, "step:second", "out:OUTPUT0"), port(page, "out:Y", "in:Y"));
    // The slip: C (INT32) dropped on second's INPUT1 (FP32). The drop is kept, and flagged at once.
    await drag(page, port(page, "in:C", "out:C"), port(page, "step:second", "in:INPUT1"));
    await expect.poll(() => graphStatus(page).textContent()).toContain("⚠ datatype INT32 → FP32");
    expect(await graphStatus(page).textContent()).toContain("Connected C → second · INPUT1.");

    // The drags wrote the spec (the JSON editor's text): one source of truth.
    await expect
      .poll(() => specSteps(page))
      .toEqual([
        expect.objectContaining({
          id: "first",
          inputs: { INPUT0: "A", INPUT1: "B" },
          outputs: { OUTPUT0: "first_OUTPUT0" },
        }),
        expect.objectContaining({
          id: "second",
          inputs: { INPUT0: "first_OUTPUT0", INPUT1: "C" },
          outputs: { OUTPUT0: "Y" },
        }),
      ]);

    // The gateway's edge check marks the same connection on its edge, with the mismatch written there.
    const edge = await visible(problemEdges(page), 20_000);
    expect(await problemEdges(page).count()).toBe(1);
    expect(await edge.locator(".react-flow__edge-text").textContent()).toBe("C → INPUT1 ⚠ datatype INT32 → FP32");
    expect(await page.locator(".operator-graph .react-flow__edge").count()).toBe(5);
    await visible(validation(page).getByText(/datatype INT32 does not match FP32/));

    // Saving is refused, naming the problem; nothing was stored.
    await page.getByRole("button", { name: "Create operator" }).click();
    await expect
      .poll(
        async () =>
          (await formAlert(page).allTextContents()).join(" ") +
          (await page.locator(".field-error").allTextContents()).join(" "),
        {
          timeout: 20_000,
        },
      )
      .toMatch(/datatype INT32 does not match FP32/);
    expect(new URL(page.url()).pathname).toBe("/operators/new");
    await axeInBothSchemes(page, "mismatch flagged");
    expect(system.session.errors).toEqual([]);
  }, 120_000);

  it("removes and makes a connection from the keyboard, with visible focus", async () => {
    const { page } = system.session;
    const connections = page.locator(".operator-graph").getByRole("list", { name: "Connections" });
    const remove = connections.getByRole("button", { name: "Remove the connection second · OUTPUT0 → Y" });
    await remove.focus();
    await page.keyboard.press("Enter");
    // second still publishes OUTPUT0, under a name of its own; nothing answers Y any more.
    await expect.poll(async () => (await specSteps(page))[1]!.outputs).toEqual({ OUTPUT0: "second_OUTPUT0" });
    await visible(validation(page).getByText("operator output 'Y' is not produced by any step"), 20_000);

    // Enter on second's OUTPUT0 picks it; Enter on Y connects them.
    const output = port(page, "step:second", "out:OUTPUT0");
    await visible(output);
    await output.focus();
    await page.keyboard.press("Enter");
    expect(await output.getAttribute("aria-pressed")).toBe("true");
    expect(await graphStatus(page).textContent()).toContain("Picked output second · OUTPUT0 (FP32 [-1,16])");
    expect(await output.evaluate((element) => element.matches(":focus-visible"))).toBe(true);
    expect(await output.evaluate((element) => getComputedStyle(element).outlineStyle)).toBe("solid");
    const y = port(page, "out:Y", "in:Y");
    await y.focus();
    // The very elements of the graph outlive the edit: it is redrawn in place, not remounted (operator-graph.tsx).
    const yElement = await y.elementHandle();
    const outputElement = await output.elementHandle();
    await page.keyboard.press("Enter");
    await expect.poll(async () => (await specSteps(page))[1]!.outputs).toEqual({ OUTPUT0: "Y" });
    expect(await graphStatus(page).textContent()).toBe("Connected second · OUTPUT0 → Y.");
    await visible(validation(page).getByText(/datatype INT32 does not match FP32/), 20_000);
    expect(await yElement!.evaluate((element) => element.isConnected && element === document.activeElement)).toBe(true);
    expect(await outputElement!.evaluate((element) => element.isConnected)).toBe(true);
    // The redrawn graph keeps the keyboard where it was.
    await expect
      .poll(() => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset["handleid"]))
      .toBe("in:Y");
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("fixes the mismatch by dragging B onto the same port, saves, and tries it: Y = A + 2B", async () => {
    const { page } = system.session;
    await drag(page, port(page, "in:B", "out:B"), port(page, "step:second", "in:INPUT1"));
    await expect.poll(async () => (await specSteps(page))[1]!.inputs).toEqual({ INPUT0: "first_OUTPUT0", INPUT1: "B" });
    await visible(validation(page).getByText("No problems"), 20_000);
    expect(await problemEdges(page).count()).toBe(0);
    await axeInBothSchemes(page, "wired");

    await page.getByRole("button", { name: "Create operator" }).click();
    await waitForPath(page, `/operators/${OPERATOR}`);
    await visible(heading(page, OPERATOR));
    // The sections above try-it load on their own; once Capacity has its figures the form stops moving under the click.
    await visible(
      page.getByRole("region", { name: "Capacity" }).getByRole("table", { name: "Capacity per step" }),
      30_000,
    );
    const form = await visible(page.getByRole("form", { name: `Try ${OPERATOR}` }));
    const inputsField = form.getByLabel("Inputs (KServe v2 JSON tensors)");
    const prefilled = JSON.parse(await inputsField.inputValue()) as Array<{
      name: string;
      datatype: string;
      shape: number[];
    }>;
    // C is optional, so try-it asks for A and B only.
    expect(prefilled.map((input) => input.name)).toEqual(["A", "B"]);
    const a = Array.from({ length: 16 }, (_, i) => i - 4);
    const b = Array.from({ length: 16 }, (_, i) => 0.5 * i);
    await inputsField.fill(
      JSON.stringify([
        { ...prefilled[0], data: a },
        { ...prefilled[1], data: b },
      ]),
    );
    await form.getByRole("button", { name: "Run" }).click();
    // A new operator's automatic perf report starts measuring it now, on the same (shared, 2-core) host: give the answer time.
    const result = await visible(page.getByRole("region", { name: "Result" }), 60_000);
    const row = await visible(
      result.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "Y", exact: true }) }),
    );
    const y = JSON.parse((await row.locator("code.tensor-data").textContent()) ?? "") as number[];
    expect(y).toEqual(a.map((value, i) => value + 2 * b[i]!));
    await axeInBothSchemes(page, "tried");
    expect(system.session.errors).toEqual([]);
  }, 120_000);
});
