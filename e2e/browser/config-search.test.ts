import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { signedInApiSession } from "./support/admin-api.js";
import { chartFigure, chartSurface } from "./support/chart-reading.js";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { writeTinyMlpFile } from "./support/model-files.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: search the config of an uploaded model from its page,
// read the chart (Pareto front, recommended config) and the candidates, and
// apply the recommendation in one click. The tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const MODEL = "search-mlp";

describe("console: the config search's chart and apply", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    prepare: async (operon) => {
      // No hardware profile yet: the first test sees the form warn about the cost objective, then adds one.
      const api = await signedInApiSession(operon, ADMIN);
      const file = writeTinyMlpFile(`${MODEL}.onnx`);
      const begun = await api.client.models.upload.begin.mutate({
        name: MODEL,
        fileName: `${MODEL}.onnx`,
        sizeBytes: file.sizeBytes,
        sha256: file.sha256,
      });
      await api.client.models.upload.chunk.mutate({
        uploadId: begun.uploadId,
        offset: 0,
        data: readFileSync(file.path).toString("base64"),
      });
      await api.client.models.upload.inspect.mutate({ uploadId: begun.uploadId });
      await api.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
    },
  });

  it("starts a search from the model's page and follows it until it succeeds", async () => {
    const { page } = system.session;
    await page.goto(`/models/${MODEL}`);
    await visible(heading(page, MODEL));
    await page.getByRole("link", { name: "Config search" }).click();
    await waitForPath(page, `/models/${MODEL}/config-search`);
    await visible(heading(page, `Config search: ${MODEL}`));
    await visible(page.getByText("No config search of this model yet"));

    const form = page.getByRole("form", { name: "New search" });
    // The cost objective needs a hardware profile to price candidates: the form says so before starting.
    const objective = form.getByLabel("Objective");
    await objective.selectOption("MIN_COST");
    const warning = form.getByText("The lowest cost needs a hardware profile to price the candidates");
    await visible(warning);
    expect(await warning.getByRole("link", { name: "Hardware" }).getAttribute("href")).toBe("/hardware");
    // The select is wide enough to show its longest objective whole.
    const fits = await objective.evaluate((select: HTMLSelectElement) => {
      const context = document.createElement("canvas").getContext("2d")!;
      context.font = getComputedStyle(select).font;
      const widest = Math.max(...[...select.options].map((option) => context.measureText(option.text).width));
      return { widest, width: select.clientWidth };
    });
    expect(fits.width).toBeGreaterThan(fits.widest);

    const api = await signedInApiSession(system.operon, ADMIN);
    await api.client.hardware.create.mutate({
      name: "test-host",
      kind: "CPU",
      cpuCores: 2,
      costPerHour: 1.2,
      currency: "USD",
    });
    await page.reload();
    await form.getByLabel("Objective").selectOption("MIN_COST");
    await visible(form.getByText("Candidates are priced with the default hardware profile, test-host ($1.20/h)."));
    expect(await warning.count()).toBe(0);
    await form.getByLabel("Objective").selectOption("MAX_THROUGHPUT");
    await form.getByLabel("p99 budget (ms)").fill("2000");
    await form.getByText("Bounds and measurement").click();
    await form.getByLabel("Most candidates").fill("3");
    await form.getByLabel("Most instances").fill("2");
    await form.getByLabel("Highest concurrency").fill("2");
    await form.getByLabel("Measurement window (seconds)").fill("0.15");
    await form.getByRole("button", { name: "Start search" }).click();

    // One at a time: the form says so while the search goes.
    await visible(page.getByText("A search is going; one runs at a time."));
    await visible(page.getByText(/^Succeeded: [23] candidates measured$/), 120_000);
    expect(system.session.errors).toEqual([]);
  }, 150_000);

  it("draws the candidates with the Pareto front and the recommended config, and lists them", async () => {
    const { page } = system.session;
    const api = await signedInApiSession(system.operon, ADMIN);
    const [summary] = await api.client.configSearch.list.query({ model: MODEL });
    const search = await api.client.configSearch.get.query({ id: summary!.id });
    const recommended = search.candidates[search.recommendedIndex!]!;

    const chart = await visible(chartFigure(page, "Throughput vs p99 latency"));
    const surface = chartSurface(chart);
    // Every measured candidate is a point; the front is joined by a line; the recommended one is its own symbol.
    expect(await surface.locator(".search-candidates .recharts-scatter-symbol").count()).toBe(search.candidates.length);
    expect(await surface.locator(".search-pareto-front .recharts-scatter-symbol").count()).toBe(
      search.candidates.filter((candidate) => candidate.pareto).length,
    );
    expect(await surface.locator(".search-pareto-front .recharts-scatter-line").count()).toBe(1);
    expect(await surface.locator(".search-recommended .recharts-scatter-symbol").count()).toBe(1);
    const caption = (await chart.locator("figcaption").textContent()) ?? "";
    expect(caption).toContain(`${search.candidates.length} candidates, p99 budget 2,000 ms. Pareto front: `);
    expect(caption).toContain(`Recommended: #${recommended.index + 1},`);
    expect(await chart.getByText("Pareto front", { exact: true }).count()).toBe(1); // the legend

    const table = page.getByRole("table", { name: /Every candidate measured/ });
    expect(await table.getByRole("row").count()).toBe(search.candidates.length + 1);
    const row = table
      .getByRole("row")
      .filter({ has: page.getByRole("rowheader", { name: String(recommended.index + 1), exact: true }) });
    expect(await row.textContent()).toContain("recommended");
    expect(await row.getAttribute("aria-current")).toBe("true");
    // The recommended row is filled with the theme's soft accent (not a colour of its own).
    const fill = await row.evaluate((tr) => {
      const probe = document.createElement("div");
      probe.style.background = "var(--color-accent-soft)";
      document.body.append(probe);
      const accent = getComputedStyle(probe).backgroundColor;
      probe.remove();
      return { cell: getComputedStyle(tr.querySelector("td")!).backgroundColor, accent };
    });
    expect(fill.cell).toBe(fill.accent);
    expect(await page.getByRole("region", { name: "Recommendation" }).textContent()).toContain(
      `#${recommended.index + 1}: ${recommended.instanceCount} instance`,
    );

    // The page passes axe (WCAG 2.1 A/AA) in both colour schemes, chart and highlighted row included.
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const violations = await accessibilityViolations(page);
      expect(
        violations.map(
          (violation) => `${scheme}: ${violation.rule}: ${violation.help} at ${violation.where.join(", ")}`,
        ),
      ).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("applies the recommended config in one click, and the model's page shows the new config", async () => {
    const { page } = system.session;
    const api = await signedInApiSession(system.operon, ADMIN);
    const [summary] = await api.client.configSearch.list.query({ model: MODEL });
    const search = await api.client.configSearch.get.query({ id: summary!.id });
    const recommended = search.candidates[search.recommendedIndex!]!;

    // Applying reloads the model: a dialog names the candidate first, and Cancel changes nothing.
    await page.getByRole("button", { name: "Apply recommended config" }).click();
    const dialog = await visible(
      page.getByRole("dialog", { name: `Apply candidate #${recommended.index + 1} to ${MODEL}?` }),
    );
    expect(await dialog.textContent()).toContain("replacing its current config");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    expect(await dialog.isVisible()).toBe(false);
    expect((await api.client.configSearch.get.query({ id: summary!.id })).appliedIndex).toBeNull();
    await page.getByRole("button", { name: "Apply recommended config" }).click();
    await dialog.getByRole("button", { name: "Apply and reload" }).click();
    await visible(
      page.getByText(`Applied #${recommended.index + 1}: the model was reloaded with its new config.`),
      60_000,
    );
    // The candidates table re-renders after the message: wait for its "applied" row, then check there is one.
    await visible(page.getByRole("row").filter({ hasText: "applied" }), 30_000);
    expect(await page.getByRole("row").filter({ hasText: "applied" }).count()).toBe(1);

    await page.getByRole("link", { name: "See the model's config" }).click();
    await waitForPath(page, `/models/${MODEL}`);
    // The page shows config.pbtxt first (Triton's format); the JSON view has every field the gateway filled in.
    await page.getByRole("group", { name: "Show as" }).getByRole("radio", { name: "JSON" }).check();
    const shown = await visible(page.getByLabel("Config JSON"));
    const config = JSON.parse((await shown.textContent()) ?? "{}") as {
      max_batch_size: number;
      instance_group: Array<{ count: number }>;
    };
    expect(config.max_batch_size).toBe(recommended.maxBatchSize);
    expect(config.instance_group.reduce((sum, group) => sum + group.count, 0)).toBe(recommended.instanceCount);
    const model = await api.client.models.get.query({ name: MODEL });
    expect(model.state).toBe("READY");

    // The config change is audited with the search it came from.
    const event = (await api.client.audit.list.query({ action: "model.updateConfig", targetId: MODEL })).events[0]!;
    expect(event.after).toMatchObject({ source: { configSearch: search.id, candidate: recommended.index } });
    expect(system.session.errors).toEqual([]);
  }, 90_000);
});
