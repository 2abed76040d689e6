import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { signedInApiSession } from "./support/admin-api.js";
import { chartFigure, chartSurface, drawnPoints } from "./support/chart-reading.js";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: measure add_sub at concurrency 1 and 2 from the console,
// follow the run, then read its report: charts and Triton's perf table. The
// tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const UUID = /^\/perf\/[0-9a-f-]{36}$/;

describe("console: a perf report for add_sub", () => {
  const system = useSignedInConsole({ admin: ADMIN });
  let reportPath = "";

  it("starts a small run and follows it on a progress bar until it succeeds", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Perf reports" }).click();
    await visible(heading(page, "Perf reports"));
    await visible(page.getByText("No perf reports yet"));

    const form = page.getByRole("form", { name: "New run" });
    await form.getByLabel("Target", { exact: true }).selectOption("MODEL:add_sub");
    await form.getByLabel("From", { exact: true }).fill("1");
    await form.getByLabel("To", { exact: true }).fill("2");
    await form.getByLabel("Step", { exact: true }).fill("1");
    await form.getByLabel("Batch size").fill("1");
    await form.getByLabel("Measurement interval (seconds)").fill("0.5");
    await form.getByRole("button", { name: "Start run" }).click();

    const progress = await visible(page.getByRole("progressbar"));
    expect(Number(await progress.getAttribute("max"))).toBe(100);
    // While it runs, another run can still be asked for: it would wait in the queue.
    expect(await form.getByRole("button", { name: "Start run" }).isEnabled()).toBe(true);

    await visible(page.getByText(/^Succeeded: 2 of 2 steps measured$/), 120_000);
    expect(Number(await progress.getAttribute("value"))).toBe(100);
    // The list catches up on its next refresh (every 3 s while a run goes).
    const row = await visible(
      page.getByRole("row").filter({ hasText: "model add_sub" }).filter({ hasText: "Succeeded" }),
      30_000,
    );
    expect(await row.textContent()).toMatch(/1–2/);
    expect(system.session.errors).toEqual([]);
  }, 150_000);

  it("opens the finished report: throughput vs latency, by concurrency, and one table row per concurrency", async () => {
    const { page } = system.session;
    await page.getByRole("link", { name: "Open the report" }).click();
    await page.waitForURL((url) => UUID.test(url.pathname));
    reportPath = new URL(page.url()).pathname;
    await visible(heading(page, "Perf report: model add_sub v1"));

    // One latency unit for the whole report (charts, captions, table): milliseconds, the console's one latency unit
    // on every page (issue 27 item 10), whatever the report's largest latency.
    const api = await signedInApiSession(system.operon, ADMIN);
    const id = reportPath.split("/").pop()!;
    const stored = await api.client.perf.get.query({ id });
    const [unit, unitName, usPerUnit] = ["ms", "milliseconds", 1000] as const;

    const curve = await visible(chartFigure(page, "Throughput vs p95 latency"));
    expect(await drawnPoints(curve)).toBe(2);
    expect(await chartSurface(curve).textContent()).toContain(`p95 latency (${unit})`);
    expect(await chartSurface(curve).textContent()).toContain("inferences/s");
    expect(await curve.locator("figcaption").textContent()).toMatch(
      new RegExp(`^2 steps: c=1 [\\d.,]+ infer/s at [\\d.,]+ ${unit}; c=2 `),
    );
    expect(await drawnPoints(chartFigure(page, "Throughput by concurrency"))).toBe(2);
    const byConcurrency = chartFigure(page, "Latency by concurrency");
    expect(await drawnPoints(byConcurrency)).toBe(8);
    expect(await chartSurface(byConcurrency).textContent()).toContain(`latency (${unit})`);
    // One batch size: no batch-size chart.
    expect(await chartFigure(page, "Best throughput by batch size").count()).toBe(0);

    // The table says what the API stored, step by step, in the same unit.
    const table = page.getByRole("table", { name: new RegExp(`latencies and server times in ${unitName}`) });
    const headers = await table.getByRole("columnheader").allTextContents();
    expect(headers.slice(0, 10)).toEqual([
      "Concurrency",
      "Batch",
      "Inferences/s",
      ...["p50", "p90", "p95", "p99", "Avg", "Queue", "Compute"].map((name) => `${name} (${unit})`),
    ]);
    const rows = table.locator("tbody tr");
    expect(await rows.count()).toBe(2);
    const shown = (cell: string) => Number(cell.replace(/,/g, ""));
    // 3 decimals below 1 ms, 2 below 10, 1 below 100, none above (the console's formatLatencyValue).
    const rounding = (value: number) => (value >= 100 ? 0.5 : value >= 10 ? 0.05 : value >= 1 ? 0.005 : 0.0005) + 1e-9;
    for (const [index, sample] of stored.samples.entries()) {
      const cells = await rows.nth(index).locator("th, td").allTextContents();
      expect(cells[0]).toBe(String(sample.concurrency));
      expect(cells[1]).toBe("1");
      expect(Math.abs(shown(cells[3]!) - sample.latencyP50Us! / usPerUnit)).toBeLessThanOrEqual(
        rounding(sample.latencyP50Us! / usPerUnit),
      );
      expect(Math.abs(shown(cells[6]!) - sample.latencyP99Us! / usPerUnit)).toBeLessThanOrEqual(
        rounding(sample.latencyP99Us! / usPerUnit),
      );
    }
    expect(stored.samples.map((sample) => sample.concurrency)).toEqual([1, 2]);
    // The stable flag per step, as the run judged it (perf_analyzer's last three windows within 10 %).
    expect(headers).toContain("Stable");
    const stableColumn = headers.indexOf("Stable");
    for (const [index, step] of stored.summary!.steps.entries()) {
      const cells = await rows.nth(index).locator("th, td").allTextContents();
      expect(cells[stableColumn]).toBe(step.stable ? "yes" : "no: windows did not agree");
    }
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("imports a perf_analyzer CSV as a report of add_sub, after naming a bad file's problem", async () => {
    const { page } = system.session;
    await page.goto(`${system.operon.consoleUrl}/perf`);
    const form = await visible(page.getByRole("form", { name: "Import a perf_analyzer CSV" }));
    await form.getByLabel("Target", { exact: true }).selectOption("MODEL:add_sub");
    const header =
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";
    await form.getByLabel("CSV file").setInputFiles({
      name: "broken.csv",
      mimeType: "text/csv",
      buffer: Buffer.from("Concurrency,Inferences/Second\n1,2\n"),
    });
    await form.getByRole("button", { name: "Import report" }).click();
    await visible(form.getByText(/broken\.csv: line 1: not perf_analyzer's CSV header: missing 'p50 latency'/));
    await form.getByLabel("CSV file").setInputFiles({
      name: "triton-perf.csv",
      mimeType: "text/csv",
      buffer: Buffer.from(
        `${header}\n1,1021.21,19,301,23,12,597,10,2,944,1146,1231,1459\n4,2410.5,25,420,60,15,900,14,3,1500,1800,1900,2300\n`,
      ),
    });
    await form.getByLabel("Instances measured").fill("2");
    await form.getByRole("button", { name: "Import report" }).click();
    await page.waitForURL((url) => UUID.test(url.pathname));
    await visible(heading(page, "Perf report: model add_sub"));
    await visible(page.getByText(/imported from triton-perf\.csv by admin@example\.com/));
    const table = page.getByRole("table", { name: /latencies and server times in/ });
    const rows = table.locator("tbody tr");
    expect(await rows.count()).toBe(2);
    const first = await rows.nth(0).locator("th, td").allTextContents();
    expect(first[0]).toBe("1");
    expect(first.at(-1)).toBe("—");
    await saveScreenshot(page, import.meta.filename, "imported perf_analyzer CSV");
    // Back to the run measured above, for the next test.
    await page.goto(`${system.operon.consoleUrl}${reportPath}`);
    await visible(heading(page, "Perf report: model add_sub v1"));
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("compares the measured run with the imported report of add_sub, step by step, with the changes (issue 27 item 10)", async () => {
    const { page } = system.session;
    // The report page links to the comparison with itself as A.
    const idA = reportPath.split("/").pop()!;
    expect(await page.getByRole("link", { name: "Compare with another report" }).getAttribute("href")).toBe(
      `/perf/compare?a=${idA}`,
    );
    // From the list: A first, then B among the reports of A's target only.
    await page.goto(`${system.operon.consoleUrl}/perf`);
    await page.getByRole("link", { name: "Compare two reports" }).click();
    await visible(heading(page, "Compare perf reports"));
    const choiceB = page.getByLabel("Report B (same target)");
    expect(await choiceB.isDisabled()).toBe(true);
    await page.getByLabel("Report A").selectOption(idA);
    await page.waitForURL((url) => url.searchParams.get("a") === idA);
    await visible(choiceB.and(page.locator(":enabled")));
    const options = await choiceB.locator("option").allTextContents();
    expect(options).toHaveLength(2);
    expect(options[1]).toMatch(/^model add_sub · .+ · imported from triton-perf\.csv by admin@example\.com$/);
    await choiceB.selectOption({ index: 1 });
    await page.waitForURL((url) => url.pathname === "/perf/compare" && url.searchParams.get("b") !== null);
    const idB = new URL(page.url()).searchParams.get("b")!;

    const api = await signedInApiSession(system.operon, ADMIN);
    const [a, b] = await Promise.all([idA, idB].map((id) => api.client.perf.get.query({ id })));
    // Milliseconds, as every latency in the console.
    const [unit, usPerUnit] = ["ms", 1000] as const;
    const table = await visible(
      page.getByRole("table", {
        name: new RegExp("^Steps of reports A and B; latencies in milliseconds"),
      }),
    );
    expect(await table.getByRole("columnheader").allTextContents()).toEqual([
      "Concurrency",
      "Batch",
      ...["Inferences/s", `p50 (${unit})`, `p99 (${unit})`].flatMap((name) => [
        `${name} A`,
        `${name} B`,
        `${name} change`,
      ]),
    ]);
    // The run measured c=1 and 2, the CSV c=1 and 4: three rows, each step where either measured it.
    const rows = table.locator("tbody tr");
    expect(await rows.count()).toBe(3);
    const cells = async (index: number) => rows.nth(index).locator("th, td").allTextContents();
    const shown = (cell: string) => Number(cell.replace(/,/g, ""));
    const change = (cell: string) => Number(cell.replace("−", "-").replace(" %", ""));
    const [one, two, four] = [await cells(0), await cells(1), await cells(2)];
    expect([one[0], two[0], four[0]]).toEqual(["1", "2", "4"]);
    const measured = a!.samples.find((sample) => sample.concurrency === 1)!;
    expect(shown(one[3]!)).toBe(1021);
    expect(Math.abs(shown(one[2]!) - measured.throughput)).toBeLessThanOrEqual(
      Math.max(0.5, measured.throughput * 0.01),
    );
    expect(change(one[4]!)).toBeCloseTo(((1021.21 - measured.throughput) / measured.throughput) * 100, 0);
    expect(Math.abs(shown(one[9]!) - 1459 / usPerUnit)).toBeLessThanOrEqual(1459 / usPerUnit / 100 + 0.5 / usPerUnit);
    expect(change(one[10]!)).toBeCloseTo(((1459 - measured.latencyP99Us!) / measured.latencyP99Us!) * 100, 0);
    // A step only one report measured has no change to give.
    expect([two[3], two[4], four[2], four[4]]).toEqual(["—", "—", "—", "—"]);
    expect(shown(four[3]!)).toBe(2411);
    await saveScreenshot(page, import.meta.filename, "two reports side by side");
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const violations = await accessibilityViolations(page);
      expect(violations.map((violation) => `${scheme}: ${violation.rule} ${violation.where.join(", ")}`)).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(system.session.errors).toEqual([]);
    await page.goto(`${system.operon.consoleUrl}${reportPath}`);
    await visible(heading(page, "Perf report: model add_sub v1"));
  }, 60_000);

  it("shows the curve against p99 and deletes the report after confirming", async () => {
    const { page } = system.session;
    await page.getByRole("radio", { name: "p99" }).check();
    const curve = await visible(chartFigure(page, "Throughput vs p99 latency"));
    expect(await drawnPoints(curve)).toBe(2);

    await page.getByRole("button", { name: /^Delete report / }).click();
    const dialog = await visible(page.getByRole("dialog", { name: "Delete this perf report?" }));
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    await page.getByRole("button", { name: /^Delete report / }).click();
    await dialog.getByRole("button", { name: "Delete report" }).click();
    await waitForPath(page, "/perf");
    // The measured run is gone; the imported report stays.
    await visible(page.getByRole("row").filter({ hasText: "imported from triton-perf.csv" }));
    expect(await page.getByRole("row").filter({ hasText: "1–2" }).count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);
  it("writes a sub-millisecond p99 the same on the model's page as in the report's table (issue 27 item 10)", async () => {
    // A report whose latencies are all under 1 ms: reports used to switch to µs for those ("412"), while the model's
    // page wrote the same p99 in ms ("0.412 ms"). Imported after the other tests, so it is add_sub's latest report.
    const { page } = system.session;
    const api = await signedInApiSession(system.operon, ADMIN);
    const header =
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";
    const { id } = await api.client.perf.importCsv.mutate({
      target: { kind: "MODEL", name: "add_sub" },
      fileName: "sub-ms.csv",
      csv: `${header}\n1,2400.5,10,100,20,5,250,5,2,300,350,380,412\n`,
    });
    await page.goto(`${system.operon.consoleUrl}/perf/${id}`);
    await visible(heading(page, "Perf report: model add_sub"));
    const table = page.getByRole("table", { name: /latencies and server times in/ });
    const headers = await table.getByRole("columnheader").allTextContents();
    const inReport = (await table.locator("tbody tr").first().locator("th, td").allTextContents())[
      headers.findIndex((header) => header.startsWith("p99 ("))
    ]!;

    await page.goto(`${system.operon.consoleUrl}/models/add_sub`);
    await visible(heading(page, "add_sub"));
    const summary = await visible(page.getByText(/^Best: .* at concurrency 1, p99 /));
    expect(await summary.textContent()).toMatch(/, p99 0\.412 ms$/);
    expect(`${inReport} ${headers.find((header) => header.startsWith("p99 ("))!.slice(5, -1)}`).toBe("0.412 ms");
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
