import { fileURLToPath } from "node:url";
import type { Locator, Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { signedInApiSession } from "./support/admin-api.js";
import { heading, visible } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";
import { midWordBreaks } from "./support/text-layout.js";

// The console's one DataTable (issue 26) and long names in it (issue 27, item 5): a 69-character operator name
// and a long email must not push numeric columns or buttons out of sight, nor break inside a word; they are cut
// with an ellipsis and the whole name is on hover. Sorting, search and the empty state are the same on every
// table. The tests run in order on one server.
const SPEC = fileURLToPath(import.meta.url);
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "tables-admin@example.com", password: "a long enough passphrase" };
const LONG_OPERATOR = "text_direction_classifier_with_preprocessing_and_postprocessing_v2_eu";
const LONG_EMAIL = "evelyn.margaret.richardson-worthington@engineering.example.com";
const OPERATOR_SPEC = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "Y" } },
  ],
};

/** The element lies within the viewport's width (not cut off or pushed to the right of it). */
async function withinViewport(page: Page, locator: Locator): Promise<boolean> {
  const box = await locator.boundingBox();
  const width = page.viewportSize()?.width ?? 0;
  return box !== null && box.x >= 0 && box.x + box.width <= width + 1;
}

/** The text under the locator is clipped (ellipsis) and its title holds the whole text. */
async function truncation(locator: Locator): Promise<{ clipped: boolean; title: string | null; ellipsis: string }> {
  return locator.evaluate((element) => ({
    clipped: element.scrollWidth > element.clientWidth,
    title: element.getAttribute("title"),
    ellipsis: getComputedStyle(element).textOverflow,
  }));
}

describe("console: one DataTable, long names", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    shared: true,
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      expect(LONG_OPERATOR).toHaveLength(69);
      await api.client.operators.create.mutate({ name: LONG_OPERATOR, spec: OPERATOR_SPEC });
      await api.client.users.create.mutate({
        email: LONG_EMAIL,
        name: "Evelyn Richardson-Worthington",
        role: "ENGINEER",
        password: "another long enough passphrase",
      });
    },
  });

  // The system is shared with other specs: the operator goes (the user stays: the API deletes no accounts, and its
  // email is the spec's own). Runs before the harness's afterAll (hooks run last-registered first).
  afterAll(async () => {
    const api = await signedInApiSession(system.operon, ADMIN);
    await api.client.operators.delete.mutate({ name: LONG_OPERATOR });
  });

  it("keeps the Overview's numeric columns in view beside a 69-character name", async () => {
    const { page } = system.session;
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto("/");
    await visible(heading(page, "Overview"));
    const table = await visible(page.getByRole("table", { name: "Live numbers per model version" }));
    const row = await visible(table.getByRole("row").filter({ hasText: LONG_OPERATOR }));
    for (const name of ["p99", "Instances", "CPU", "Memory"]) {
      const header = table.getByRole("columnheader", { name: new RegExp(`^${name}`) });
      expect(await withinViewport(page, header), `the ${name} column is in view`).toBe(true);
    }
    const name = row.locator(".truncated").first();
    expect(await truncation(name)).toEqual({ clipped: true, title: LONG_OPERATOR, ellipsis: "ellipsis" });
    // The whole name is still the row's accessible name (only painted shorter).
    await visible(table.getByRole("rowheader", { name: new RegExp(`^${LONG_OPERATOR}`) }));
    // Memory as it is (issue 27, item 7): the gateway holds the ONNX models, so the tile counts it and their rows say so.
    const memory = page.getByRole("definition").filter({ hasText: /^resident: gateway \d/ });
    await visible(memory);
    const addSub = await visible(table.getByRole("row", { name: /^add_sub / }));
    expect(await addSub.getByRole("cell").last().textContent()).toBe("in gateway");
    await saveScreenshot(page, SPEC, "overview with a long operator name");
    expect(system.session.errors).toEqual([]);
  });

  it("keeps the Models list's buttons in view, sorts by a column and searches by name and backend", async () => {
    const { page } = system.session;
    await page.goto("/models");
    await visible(heading(page, "Models"));
    const table = await visible(page.getByRole("table", { name: "Models" }));
    for (const button of await table.getByRole("button", { name: /^(Unload|Load|Delete)/ }).all()) {
      expect(await withinViewport(page, button)).toBe(true);
    }
    // A Backend column, named as Triton names backends.
    const addSub = await visible(table.getByRole("row", { name: /^add_sub / }));
    expect(await addSub.getByRole("cell").allTextContents()).toContain("onnxruntime");
    // One state everywhere (issue 27, item 4): the operator is an operator here too, with no Unload button, linked
    // to its own page; the model it calls says so.
    const operatorRow = table.getByRole("row", { name: new RegExp(`^${LONG_OPERATOR} `) });
    expect(await operatorRow.getByRole("cell").allTextContents()).toContain("Operator");
    expect(await operatorRow.getByRole("button").count()).toBe(0);
    expect(await operatorRow.getByRole("link").getAttribute("href")).toBe(`/operators/${LONG_OPERATOR}`);
    // Other specs on the shared system may add operators that call add_sub too: the list names them all.
    expect(await addSub.getByRole("rowheader").textContent()).toMatch(
      new RegExp(`used by (\\S+, )*${LONG_OPERATOR}\\b`),
    );

    // Sorting: a header button; the header says how the column is sorted.
    const names = async () =>
      (await table.getByRole("rowheader").getByRole("link").allTextContents()).map((text) => text.trim());
    const ascending = await names();
    expect(ascending).toEqual([...ascending].sort((a, b) => a.localeCompare(b, undefined, { sensitivity: "base" })));
    const nameHeader = table.getByRole("columnheader", { name: /^Name/ });
    expect(await nameHeader.getAttribute("aria-sort")).toBe("ascending");
    await nameHeader.getByRole("button").click();
    expect(await nameHeader.getAttribute("aria-sort")).toBe("descending");
    expect(await names()).toEqual([...ascending].reverse());
    // From the keyboard: the header's button sorts with Enter.
    const inferences = table.getByRole("columnheader", { name: /^Inferences/ });
    await inferences.getByRole("button").focus();
    await page.keyboard.press("Enter");
    expect(await inferences.getAttribute("aria-sort")).toBe("descending");
    expect(await nameHeader.getAttribute("aria-sort")).toBe("none");

    const search = page.getByRole("searchbox", { name: "Search models" });
    await search.fill("ADD_S");
    expect(await names()).toEqual(["add_sub"]);
    await search.fill("no model is called this");
    await visible(table.getByText("No model matches"));
    await search.fill("");
    expect((await names()).length).toBe(ascending.length);
    expect(system.session.errors).toEqual([]);
  });

  it("cuts long names with an ellipsis on the Operators, Users and Audit tables, and breaks no word", async () => {
    const { page } = system.session;
    for (const [path, title, tableName, text] of [
      ["/operators", "Operators", "Operators", LONG_OPERATOR],
      ["/users", "Users", "Users", LONG_EMAIL],
      ["/audit", "Audit", "Audit events, newest first", LONG_OPERATOR],
    ] as const) {
      await page.goto(path);
      await visible(heading(page, title));
      const table = await visible(page.getByRole("table", { name: tableName }));
      await saveScreenshot(page, SPEC, `long names on ${title}`);
      const cut = await visible(table.locator(`.truncated[title$="${text}"]`).first());
      const seen = await truncation(cut);
      expect(seen.clipped, `${path}: the long name is cut`).toBe(true);
      expect(seen.ellipsis).toBe("ellipsis");
      // Every column header and every row's buttons stay in view.
      for (const header of await table.getByRole("columnheader").all()) {
        expect(await withinViewport(page, header), `${path}: ${await header.textContent()} in view`).toBe(true);
      }
      for (const button of await table.getByRole("button", { name: /^(Delete|Reset|Disable|Enable)/ }).all()) {
        expect(await withinViewport(page, button), `${path}: ${await button.textContent()} in view`).toBe(true);
      }
      expect(await midWordBreaks(page.locator("main")), path).toEqual([]);
    }
    expect(system.session.errors).toEqual([]);
  });

  it("turns rows into cards on a phone, with nothing wider than the screen, axe-clean in both schemes", async () => {
    const { page } = system.session;
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [390, 1280]) {
        await page.setViewportSize({ width, height: 800 });
        for (const [path, title] of [
          ["/", "Overview"],
          ["/models", "Models"],
          ["/operators", "Operators"],
          ["/users", "Users"],
          ["/audit", "Audit"],
          ["/workers", "Workers"],
        ] as const) {
          await page.goto(path);
          await visible(heading(page, title));
          await page.locator("main table").first().waitFor({ state: "visible" });
          await page.waitForLoadState("networkidle");
          if (width === 390) {
            const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
            expect(overflow, `${path} is no wider than the phone`).toBeLessThanOrEqual(0);
          }
          expect(await accessibilityViolations(page), `${path} at ${width} px, ${scheme}`).toEqual([]);
        }
        if (width === 390) await saveScreenshot(page, SPEC, `workers on a phone ${scheme}`);
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(system.session.errors).toEqual([]);
  }, 240_000);
});
