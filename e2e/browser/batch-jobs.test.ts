import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { accessibilityViolations } from "./support/accessibility.js";
import { heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task, done by the admin here: upload a CSV as a dataset, look
// at its schema and first rows, start a job of add_sub over it with a column
// mapping, watch it finish, and find the results to download. The tests run
// in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const COLUMNS = Array.from({ length: 16 }, (_, i) => i);

/** `rows` rows of id, a0..a15, b0..b15 and a label; `nullAt` leaves a0 empty (NULL) in those rows. */
function csv(rows: number, nullAt: readonly number[] = []): string {
  const header = ["id", ...COLUMNS.map((i) => `a${i}`), ...COLUMNS.map((i) => `b${i}`), "label"].join(",");
  const lines = Array.from({ length: rows }, (_, r) =>
    [
      `row-${r}`,
      ...COLUMNS.map((i) => (i === 0 && nullAt.includes(r) ? "" : r + i)),
      ...COLUMNS.map(() => 1),
      `text ${r}`,
    ].join(","),
  );
  return `${[header, ...lines].join("\n")}\n`;
}

const MAPPING = `INPUT0=${COLUMNS.map((i) => `a${i}`).join(",")}\nINPUT1=${COLUMNS.map((i) => `b${i}`).join(",")}`;

async function uploadDataset(page: Page, dir: string, name: string, content: string, query?: string): Promise<void> {
  const file = join(dir, `${name}.csv`);
  writeFileSync(file, content);
  const form = page.getByRole("form", { name: "Add a dataset" });
  await form.getByLabel("Name", { exact: true }).fill(name);
  await form.getByLabel("File (.csv, .jsonl, .parquet)").setInputFiles(file);
  await form.getByLabel("Query (optional)").fill(query ?? "");
  await form.getByLabel("Key columns (comma-separated, optional)").fill("id");
  await form.getByRole("button", { name: "Upload dataset" }).click();
  await visible(page.getByRole("table", { name: "Datasets" }).getByRole("rowheader", { name, exact: true }));
}

async function startJob(page: Page, dataset: string): Promise<void> {
  const form = page.getByRole("form", { name: "Start a job" });
  await form.getByLabel("Dataset").selectOption({ label: dataset });
  await form.getByLabel("Model or operator name").fill("add_sub");
  await form.getByLabel("Column mapping (one a line; empty: suggested)").fill(MAPPING);
  await form.getByRole("button", { name: "Start job" }).click();
}

async function expectAxeCleanInBothSchemes(page: Page): Promise<void> {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const violations = await accessibilityViolations(page);
    expect(violations.map((v) => `${scheme}: ${v.rule}: ${v.help} at ${v.where.join(", ")}`)).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

describe("console: batch jobs over an uploaded dataset", () => {
  const system = useSignedInConsole({ admin: ADMIN });

  it("uploads a CSV as a dataset and previews its schema and first rows", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Jobs" }).click();
    await visible(heading(page, "Jobs"));
    const file = join(system.operon.dataDir, "vectors.csv");
    writeFileSync(file, csv(400));
    const form = page.getByRole("form", { name: "Add a dataset" });
    await form.getByLabel("Name", { exact: true }).fill("vectors");
    await form.getByLabel("File (.csv, .jsonl, .parquet)").setInputFiles(file);
    await form.getByLabel("Query (optional)").fill("SELECT * FROM sourc");
    await form.getByRole("button", { name: "Upload dataset" }).click();
    // A typo in the query: DuckDB's reason, at the field.
    await visible(form.getByText(/Catalog Error: Table with name sourc does not exist/));
    await form.getByLabel("Query (optional)").fill("SELECT * FROM source WHERE id <> 'row-3'");
    await form.getByLabel("Key columns (comma-separated, optional)").fill("id");
    await form.getByRole("button", { name: "Upload dataset" }).click();
    const row = await visible(page.getByRole("table", { name: "Datasets" }).getByRole("row", { name: /^vectors/ }));
    await row.getByRole("button", { name: "Preview" }).click();
    const preview = await visible(
      page.getByRole("region", { name: "Dataset preview" }).or(page.getByLabel("Dataset preview")),
    );
    await visible(preview.getByText("vectors: 399 rows"));
    await visible(preview.getByText("a0 BIGINT"));
    await visible(preview.getByRole("cell", { name: "row-0", exact: true }));
    expect(system.session.errors).toEqual([]);
  });

  it("refuses a mapping that does not fit, then runs a job to results", async () => {
    const { page } = system.session;
    const form = page.getByRole("form", { name: "Start a job" });
    await form.getByLabel("Dataset").selectOption({ label: "vectors" });
    await form.getByLabel("Model or operator name").fill("add_sub");
    await form.getByLabel("Column mapping (one a line; empty: suggested)").fill("INPUT0=label\nINPUT1=a0");
    await form.getByRole("button", { name: "Start job" }).click();
    await visible(form.getByText(/the column mapping does not fit/));
    const a = COLUMNS.map((i) => `a${i}`).join(",");
    const b = COLUMNS.map((i) => `b${i}`).join(",");
    await form.getByLabel("Column mapping (one a line; empty: suggested)").fill(`INPUT0=${a}\nINPUT1=${b}`);
    // Rows per request: the form refuses what is no whole number; the API refuses more than add_sub batches (8).
    const rows = form.getByLabel("Rows per request (optional)");
    await rows.fill("2.5");
    await form.getByRole("button", { name: "Start job" }).click();
    await visible(form.getByText("a whole number of rows, 1 or more"));
    await rows.fill("9");
    await form.getByRole("button", { name: "Start job" }).click();
    await visible(form.getByText("1 to 8: the model's max_batch_size is 8"));
    await rows.fill("4");
    await form.getByRole("button", { name: "Start job" }).click();
    const job = await visible(page.getByRole("row", { name: /job model add_sub on vectors/ }));
    await visible(job.getByText("done"), 120_000);
    await visible(job.getByText("399 / 399 rows (100 %)"));
    const download = await visible(job.getByRole("link", { name: "Download results" }));
    const href = await download.getAttribute("href");
    expect(href).toMatch(/^\/api\/jobs\/[0-9a-f-]{36}\/result\.parquet$/);
    const response = await page.request.get(new URL(href!, page.url()).toString());
    expect(response.status()).toBe(200);
    expect((await response.body()).subarray(0, 4).toString()).toBe("PAR1");
    expect(system.session.errors).toEqual([]);
  });

  it("lists a job's failed rows with their key and error, axe-clean in both schemes", async () => {
    const { page } = system.session;
    await uploadDataset(page, system.operon.dataDir, "gappy", csv(20, [5]));
    await startJob(page, "gappy");
    const job = await visible(page.getByRole("row", { name: "job model add_sub on gappy", exact: true }));
    await visible(job.getByText("done"), 120_000);
    await visible(job.getByText("20 / 20 rows (100 %)"));
    await visible(job.getByRole("button", { name: "Retry failed rows" }));
    await job.getByRole("button", { name: "1 failed" }).click();
    const panel = await visible(page.getByRole("region", { name: "Failed rows" }));
    const failures = panel.getByRole("table", { name: "Failed rows of the job" });
    const failed = await visible(failures.getByRole("row", { name: /^5 / }));
    await visible(failed.getByRole("cell", { name: "id=row-5", exact: true }));
    await visible(failed.getByRole("cell", { name: "column 'a0' is NULL", exact: true }));
    await visible(failed.getByRole("cell", { name: "1", exact: true }));
    await expectAxeCleanInBothSchemes(page);
    expect(system.session.errors).toEqual([]);
  }, 180_000);

  it("pauses, resumes and cancels a long job from its row", async () => {
    const { page } = system.session;
    // 399 rows a thousand times over: long enough to be caught running on any host.
    await uploadDataset(page, system.operon.dataDir, "repeated", csv(400), "SELECT source.* FROM source, range(1000)");
    await startJob(page, "repeated");
    const job = await visible(page.getByRole("row", { name: "job model add_sub on repeated", exact: true }));
    await job.getByRole("button", { name: "Pause" }).click();
    await visible(job.getByText("paused", { exact: true }));
    await expect.poll(() => job.getByRole("button", { name: "Pause" }).count()).toBe(0);
    await job.getByRole("button", { name: "Resume" }).click();
    await visible(job.getByRole("button", { name: "Pause" }));
    await job.getByRole("button", { name: "Cancel" }).click();
    await visible(job.getByText("cancelled", { exact: true }));
    await expect.poll(() => job.getByRole("button").count()).toBe(0);
    await expect.poll(() => job.getByRole("link", { name: "Download results" }).count()).toBe(0);
    await expectAxeCleanInBothSchemes(page);
    // On a phone each job is a card (the DataTable's narrow layout): nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 800 });
    await visible(job.getByText("cancelled", { exact: true }));
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, "the Jobs page is no wider than the phone").toBeLessThanOrEqual(0);
    await expectAxeCleanInBothSchemes(page);
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(system.session.errors).toEqual([]);
  }, 180_000);
});
