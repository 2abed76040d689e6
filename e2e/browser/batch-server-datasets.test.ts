import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Locator, Page } from "playwright-core";
import { accessibilityViolations } from "./support/accessibility.js";
import { signedInApiSession } from "./support/admin-api.js";
import { openConsolePage } from "./support/browser.js";
import { heading, signIn, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// Issue 24: an admin makes a dataset of a folder of images on the server (under --batch-data-root) from
// the Jobs page and previews its rows; the form names the --batch-postgres connections (names only) for a
// table dataset; the server's refusals show at the field they concern. Engineers upload files only: the two
// server sources are not offered to them. The tests run in order on one server of the spec's own (it needs
// the two flags).
const ADMIN = { email: "server-datasets-admin@example.com", password: "a long enough passphrase" };
const ENGINEER = { email: "server-datasets-eng@example.com", password: "an engineer's passphrase" };

const DATA_ROOT = mkdtempSync(join(tmpdir(), "operon-browser-data-root-"));
const PHOTOS = join(DATA_ROOT, "photos");
// Image files are listed, not decoded: a few bytes with an image's name make a row each.
mkdirSync(join(PHOTOS, "cats"), { recursive: true });
for (const name of ["a.png", "b.jpg", "cats/c.webp"]) writeFileSync(join(PHOTOS, name), "not really an image");
writeFileSync(join(PHOTOS, "notes.txt"), "left out: not an image");
// A name and a URL: the console may show the name, never the URL (its user, host and database).
const PG_URL = process.env.OPERON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";

/** The texts that describe a field (its hint and its error, tied to it by aria-describedby), as a screen reader reads them. */
function descriptionOf(field: Locator): Promise<string> {
  return field.evaluate((element) =>
    (element.getAttribute("aria-describedby") ?? "")
      .split(" ")
      .map((id) => document.getElementById(id)?.textContent ?? "")
      .join(" "),
  );
}

async function expectAxeCleanInBothSchemes(page: Page): Promise<void> {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const violations = await accessibilityViolations(page);
    expect(violations.map((v) => `${scheme}: ${v.rule}: ${v.help} at ${v.where.join(", ")}`)).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

describe("console: datasets of the server's folders and tables (admins)", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--batch-data-root", DATA_ROOT, "--batch-postgres", `warehouse=${PG_URL}`],
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      await api.client.users.create.mutate({ ...ENGINEER, role: "ENGINEER" });
    },
  });

  it("creates a dataset of a folder of images, shows the server's refusal at the field, and previews its rows", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Jobs" }).click();
    await visible(heading(page, "Jobs"));
    const form = page.getByRole("form", { name: "Add a dataset" });
    await form.getByRole("radio", { name: "Folder of images on the server" }).check();
    await form.getByLabel("Name", { exact: true }).fill("photos");
    const folder = form.getByLabel("Folder on the server");
    // Outside every allowed root: the server's reason, at the folder's field.
    await folder.fill("/etc");
    await form.getByRole("button", { name: "Add dataset" }).click();
    await visible(form.getByText(/outside the folders datasets may read/));
    expect(await folder.getAttribute("aria-invalid")).toBe("true");
    expect(await descriptionOf(folder)).toContain("the server path '/etc' is outside the folders datasets may read");
    expect(await descriptionOf(folder)).toContain(DATA_ROOT);
    await expectAxeCleanInBothSchemes(page);
    await folder.fill(PHOTOS);
    await form.getByRole("button", { name: "Add dataset" }).click();
    const row = await visible(page.getByRole("table", { name: "Datasets" }).getByRole("row", { name: /^photos/ }));
    await visible(row.getByText("server path"));
    await row.getByRole("button", { name: "Preview" }).click();
    const preview = await visible(page.getByLabel("Dataset preview"));
    await visible(preview.getByText("photos: 3 rows"));
    await visible(preview.getByText("path VARCHAR"));
    for (const path of ["a.png", "b.jpg", "cats/c.webp"])
      await visible(preview.getByRole("cell", { name: path, exact: true }));
    await expectAxeCleanInBothSchemes(page);
    expect(system.session.errors).toEqual([]);
  }, 120_000);

  it("offers the server's PostgreSQL connections by name only and shows a missing table at its field", async () => {
    const { page } = system.session;
    const form = page.getByRole("form", { name: "Add a dataset" });
    await form.getByRole("radio", { name: "PostgreSQL table" }).check();
    const connection = form.getByLabel("Connection");
    await connection.selectOption("warehouse");
    expect(await connection.locator("option").allTextContents()).toEqual(["Choose a connection", "warehouse"]);
    expect(await page.content()).not.toContain(PG_URL);
    await form.getByLabel("Name", { exact: true }).fill("orders");
    const table = form.getByLabel("Table (table or schema.table)");
    await table.fill("no_such_table_here");
    await form.getByRole("button", { name: "Add dataset" }).click();
    await visible(form.getByText(/there is no table public\.no_such_table_here of connection 'warehouse'/));
    expect(await table.getAttribute("aria-invalid")).toBe("true");
    expect(await descriptionOf(table)).toMatch(/there is no table public\.no_such_table_here/);
    await expectAxeCleanInBothSchemes(page);
    expect(system.session.errors).toEqual([]);
  }, 120_000);

  it("offers engineers file uploads only, and the API refuses them the connection names", async () => {
    const engineer = await openConsolePage(system.browser, system.operon.consoleUrl);
    const { page } = engineer;
    await signIn(page, ENGINEER.email, ENGINEER.password);
    await page.goto("/jobs");
    const form = await visible(page.getByRole("form", { name: "Add a dataset" }));
    await visible(form.getByLabel("File (.csv, .jsonl, .parquet)"));
    expect(await form.getByRole("radio").count()).toBe(0);
    expect(await form.getByText("Folder of images on the server").count()).toBe(0);
    expect(await form.getByText("PostgreSQL table").count()).toBe(0);
    const api = await signedInApiSession(system.operon, ENGINEER);
    await expect(api.client.datasets.serverSources.query()).rejects.toMatchObject({
      data: { appCode: "FORBIDDEN" },
    });
    expect(engineer.errors).toEqual([]);
  }, 120_000);
});
