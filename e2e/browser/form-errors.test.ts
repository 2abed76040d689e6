import { fileURLToPath } from "node:url";
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { heading, visible } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// A person's task: fill a form wrong in two places and be told of both on the first submit (issue 27 item 10, "forms
// that show every error at once"). Before, each of these forms returned at its first failing check, and a form whose
// own checks failed never asked the API, so the second error only showed after fixing the first and submitting again.
// The tests run in order on one server.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const SPEC = fileURLToPath(import.meta.url);
const ADMIN = { email: "form-errors-admin@example.com", password: "a long enough passphrase" };

/** The error a TextField shows under the field labelled `label` (its aria-describedby names it). */
async function fieldError(form: Locator, label: string): Promise<string> {
  const input = form.getByLabel(label, { exact: true });
  await visible(input);
  expect(await input.getAttribute("aria-invalid")).toBe("true");
  const ids = (await input.getAttribute("aria-describedby"))?.split(" ") ?? [];
  const errorId = ids.find((id) => id.endsWith("-error"));
  expect(errorId, `${label} names no error`).toBeDefined();
  return (await form.locator(`[id="${errorId}"]`).textContent()) ?? "";
}

/** Axe in both colour schemes, with the errors on the page. */
async function axeInBothSchemes(page: Page, where: string): Promise<void> {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    expect(await accessibilityViolations(page), `${where}, ${scheme}`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

describe("console: forms show every error at once", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("the hardware profile form names an empty name and an unreadable price together", async () => {
    const { page } = system.session;
    await page.goto("/hardware");
    await visible(heading(page, "Hardware & cost"));
    await page.getByRole("button", { name: "Add profile" }).click();
    const form = await visible(page.getByRole("form", { name: "Add a hardware profile" }));
    await form.getByLabel("Name", { exact: true }).fill("");
    await form.getByLabel("Cost per hour").fill("-2");
    await form.getByRole("button", { name: "Add profile" }).click();
    expect(await fieldError(form, "Name")).toBe("required");
    expect(await fieldError(form, "Cost per hour")).toBe("a number, 0 or more");
    await saveScreenshot(page, SPEC, "hardware profile, two errors");
    await axeInBothSchemes(page, "hardware profile form");
    await form.getByRole("button", { name: "Cancel" }).click();
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("the API key form names an empty name and a negative priority together", async () => {
    const { page } = system.session;
    await page.goto("/api-keys");
    await visible(heading(page, "API keys"));
    const form = await visible(page.getByRole("form", { name: "Create a key" }));
    await form.getByLabel("Name", { exact: true }).fill("");
    await form.getByLabel("Priority level (optional)").fill("-1");
    await form.getByRole("button", { name: "Create key" }).click();
    expect(await fieldError(form, "Name")).toBe("required");
    expect(await fieldError(form, "Priority level (optional)")).toBe("a whole number, 0 or more");
    await saveScreenshot(page, SPEC, "api key, two errors");
    await axeInBothSchemes(page, "API key form");
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("the operator editor names a bad name and a spec that does not parse together", async () => {
    const { page } = system.session;
    await page.goto("/operators/new");
    await visible(heading(page, "New operator"));
    const form = await visible(page.getByRole("form", { name: "New operator" }));
    await form.getByLabel("Name", { exact: true }).fill("-not a name");
    await form.getByRole("textbox", { name: "Spec (JSON)" }).fill('{ "steps": [');
    await form.getByRole("button", { name: "Create operator" }).click();
    expect(await fieldError(form, "Name")).toMatch(/^letters, digits/);
    // The spec's error sits under the editor (a contenteditable: no aria-invalid of a TextField).
    await visible(form.locator(".editor-text .field-error"));
    expect(await form.locator(".editor-text .field-error").textContent()).not.toBe("");
    await saveScreenshot(page, SPEC, "operator editor, two errors");
    await axeInBothSchemes(page, "operator editor");
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
