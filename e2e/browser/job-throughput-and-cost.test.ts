import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { chartFigure, pollUntil, seriesFigures } from "./support/chart-reading.js";
import { heading, visible } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's question about a batch job (issue 24): how fast did it run
// beside the online traffic of its model, and what did it cost? Online clients
// call tokenizer_ts (a TypeScript model in a worker process, so its CPU is
// metered and costed) while a job runs over 3,000 phrases through it; the page
// then charts both and prices the job on the host's hardware profile.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const PROFILE = "e2e job host";
const ROWS = 3000;
// A job joins half its model's max_batch_size of rows into a request by default (tokenizer_ts batches 8: 4 rows;
// rows-per-request.ts), and the cost model charges it for its requests, as the model counts them.
const ROWS_PER_REQUEST = 4;
const JOB_REQUESTS = Math.ceil(ROWS / ROWS_PER_REQUEST);
const CHART = "Job throughput and online traffic";

async function inferTokenizer(httpUrl: string, key: string, text: string): Promise<number> {
  const response = await fetch(`${httpUrl}/v2/models/tokenizer_ts/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ inputs: [{ name: "text", shape: [1, 1], datatype: "BYTES", data: [text] }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe("console: a job's throughput beside online traffic, and its cost", () => {
  // Usage and job throughput sampled every second, so a job of a few seconds has several points.
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--usage-sample-secs", "1", "--batch-sample-ms", "1000"],
  });

  it("runs a job while online clients call its model, charts both and prices the job", async () => {
    const { page } = system.session;
    const api = await signedInApiSession(system.operon, ADMIN);
    // The host's price: the first profile is the default, and usage is costed on it.
    await api.client.hardware.create.mutate({ name: PROFILE, kind: "CPU", costPerHour: 36_000, currency: "USD" });
    const key = await createInferKey(api, "e2e online traffic");

    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Jobs" }).click();
    await visible(heading(page, "Jobs"));
    const file = join(system.operon.dataDir, "phrases.csv");
    writeFileSync(
      file,
      `id,text\n${Array.from({ length: ROWS }, (_, row) => `p-${row},phrase number ${row}`).join("\n")}\n`,
    );
    const upload = page.getByRole("form", { name: "Add a dataset" });
    await upload.getByLabel("Name", { exact: true }).fill("phrases");
    await upload.getByLabel("File (.csv, .jsonl, .parquet)").setInputFiles(file);
    await upload.getByLabel("Key columns (comma-separated, optional)").fill("id");
    await upload.getByRole("button", { name: "Upload dataset" }).click();
    await visible(page.getByRole("table", { name: "Datasets" }).getByRole("rowheader", { name: "phrases" }));

    // Online clients, two at a time, until the job is done.
    let online = true;
    const statuses: number[] = [];
    const client = async () => {
      for (let i = 0; online; i++) {
        statuses.push(await inferTokenizer(system.operon.httpUrl, key, `online ${i}`));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const clients = [client(), client()];
    try {
      const form = page.getByRole("form", { name: "Start a job" });
      await form.getByLabel("Dataset").selectOption({ label: "phrases" });
      await form.getByLabel("Model or operator name").fill("tokenizer_ts");
      await form.getByLabel("Column mapping (one a line; empty: suggested)").fill("text=text:text");
      await form.getByRole("button", { name: "Start job" }).click();
      const job = await visible(page.getByRole("row", { name: "job model tokenizer_ts on phrases", exact: true }));
      await visible(job.getByText("done", { exact: true }), 150_000);
      await visible(job.getByText(`${ROWS.toLocaleString("en")} / ${ROWS.toLocaleString("en")} rows (100 %)`));
    } finally {
      online = false;
      await Promise.all(clients);
    }
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    // The API: the job paid a share of tokenizer_ts's cost, for no more requests than it sent.
    const [listed] = await api.client.jobs.list.query();
    expect(listed?.target.name).toBe("tokenizer_ts");
    const costed = await pollUntil(
      () => api.client.jobs.get.query({ id: listed!.id }),
      // The usage sample covering the job's last second is written a second later.
      (view) => (view.cost?.total ?? 0) > 0 && (view.cost?.lines[0]?.requests ?? 0) > JOB_REQUESTS * 0.9,
      30_000,
    );
    expect(costed.cost?.currency).toBe("USD");
    expect(costed.cost?.total).toBeGreaterThan(0);
    const [line] = costed.cost!.lines;
    expect(line).toMatchObject({ profileName: PROFILE, currency: "USD" });
    expect(line!.requests).toBeGreaterThan(JOB_REQUESTS * 0.9);
    expect(line!.requests).toBeLessThanOrEqual(JOB_REQUESTS);
    // The target also answered the online clients: the job's share is less than all of it.
    expect(line!.targetRequests).toBeGreaterThan(line!.requests);

    // The page: the job (the newest) is chosen; the chart draws its rows/s and the online requests/s.
    const section = page.getByRole("region", { name: "Throughput and cost" });
    await expect.poll(() => section.getByLabel("Job", { exact: true }).inputValue()).toBe(listed!.id);
    const figure = await visible(chartFigure(section, CHART));
    const jobLine = await seriesFigures(figure, "Job rows/s");
    expect(jobLine?.points).toBeGreaterThan(1);
    expect(jobLine!.highest).toBeGreaterThan(0);
    // The chart ends where the job's last rows settled: its latest point is a rate, not the drain after it.
    expect(jobLine!.latest).toBeGreaterThan(0);
    const onlineLine = await seriesFigures(figure, "Online requests/s");
    expect(onlineLine?.highest).toBeGreaterThan(0);
    const cost = await visible(section.getByLabel("Job cost", { exact: true }));
    // The page keeps reading the cost while the usage samples of the job's last seconds come in.
    const costLine = /^Cost so far: \$[\d,]+\.\d\d — ([\d,]+) of [\d,]+ requests to tokenizer_ts on e2e job host: \$/;
    await expect
      .poll(
        async () => {
          const match = costLine.exec((await cost.textContent()) ?? "");
          return match === null ? 0 : Number(match[1]!.replace(/,/g, ""));
        },
        { timeout: 30_000 },
      )
      .toBeGreaterThan(JOB_REQUESTS * 0.9);
    expect(await cost.textContent()).not.toContain("$0.00");

    await saveScreenshot(page, import.meta.filename, "job throughput and cost");
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const violations = await accessibilityViolations(page);
      expect(violations.map((v) => `${scheme}: ${v.rule}: ${v.help} at ${v.where.join(", ")}`)).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(system.session.errors).toEqual([]);
  }, 240_000);
});
