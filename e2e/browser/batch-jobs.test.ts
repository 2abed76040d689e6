import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task, done by the admin here: upload a CSV as a dataset, look
// at its schema and first rows, start a job of add_sub over it with a column
// mapping, watch it finish, and find the results to download. The tests run
// in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const COLUMNS = Array.from({ length: 16 }, (_, i) => i);

function csv(rows: number): string {
  const header = ["id", ...COLUMNS.map((i) => `a${i}`), ...COLUMNS.map((i) => `b${i}`), "label"].join(",");
  const lines = Array.from({ length: rows }, (_, r) =>
    [`row-${r}`, ...COLUMNS.map((i) => r + i), ...COLUMNS.map(() => 1), `text ${r}`].join(","),
  );
  return `${[header, ...lines].join("\n")}\n`;
}

describe("console: batch jobs over an uploaded dataset", () => {
  const system = useSignedInConsole({ admin: ADMIN });

  it("uploads a CSV as a dataset and previews its schema and first rows", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Jobs" }).click();
    await visible(heading(page, "Jobs"));
    const file = join(system.operon.dataDir, "vectors.csv");
    writeFileSync(file, csv(400));
    const form = page.getByRole("form", { name: "Upload a dataset" });
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
});
