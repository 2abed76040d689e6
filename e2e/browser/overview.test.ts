import { describe, expect, it } from "vitest";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { chartFigure, chartSurface, drawnPoints, pollUntil, seriesFigures } from "./support/chart-reading.js";
import { heading, visible } from "./support/console-actions.js";
import { inferAddSub } from "./support/gateway-infer.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An operator's glance at the platform: real inferences go to the gateway over
// HTTP, the usage sampler (every second here) stores them, and the overview
// shows them live and on its charts, refreshing by itself. The tests run in
// order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const INFERENCES = 30;

describe("console: the overview shows real traffic", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--usage-sample-secs", "1"],
    // A priced host, so the samples of the traffic below are costed.
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      await api.client.hardware.create.mutate({
        name: "e2e host",
        kind: "CPU",
        cpuCores: 2,
        costPerHour: 3.6,
        currency: "USD",
      });
    },
  });

  it("counts inferences sent to the gateway in the live numbers, refreshing by itself", async () => {
    const { page } = system.session;
    await visible(heading(page, "Overview"));
    const liveTable = await visible(page.getByRole("table", { name: "Live numbers per model version" }));
    const addSubRow = liveTable
      .getByRole("row")
      .filter({ has: page.getByRole("rowheader", { name: "add_sub", exact: true }) });
    const requestsOf = async () =>
      Number(((await addSubRow.getByRole("cell").nth(1).textContent()) ?? "").replace(/[^\d]/g, ""));
    const before = await requestsOf();

    const api = await signedInApiSession(system.operon, ADMIN);
    const key = await createInferKey(api, "e2e overview traffic");
    for (let sent = 0; sent < INFERENCES; sent += 1) {
      const result = await inferAddSub(system.operon.httpUrl, key);
      expect(result.status, JSON.stringify(result.body)).toBe(200);
    }

    // No click: the page asks again every 10 s.
    const updatedBefore = await page.locator(".refresh-updated time").getAttribute("datetime");
    const after = await pollUntil(requestsOf, (count) => count >= before + INFERENCES, 30_000);
    expect(after).toBeGreaterThanOrEqual(before + INFERENCES);
    expect(await page.locator(".refresh-updated time").getAttribute("datetime")).not.toBe(updatedBefore);
    expect(await page.getByText(/^Updated \d\d:\d\d:\d\d/).count()).toBe(1);

    const requestsTile = page
      .getByRole("term")
      .filter({ hasText: /^Requests$/ })
      .locator("xpath=following-sibling::dd[1]");
    expect(Number(((await requestsTile.textContent()) ?? "").replace(/[^\d]/g, ""))).toBeGreaterThan(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("draws the sampled traffic on the charts", async () => {
    const { page } = system.session;
    const requests = chartFigure(page, "Requests per second");
    const latency = chartFigure(page, "Request latency");
    const perModel = chartFigure(page, "Throughput per model");
    const readRequests = async () => {
      await page.getByRole("button", { name: "Refresh now" }).click();
      await page.getByText("refreshing…").waitFor({ state: "detached" });
      return seriesFigures(requests, "Requests/s");
    };
    const figures = await pollUntil(readRequests, (value) => value !== undefined && value.highest > 0, 30_000, 1000);
    expect(figures?.highest).toBeGreaterThan(0);
    expect(figures?.points).toBeGreaterThan(0);
    expect(await drawnPoints(requests)).toBeGreaterThan(0);

    // Latency percentiles and the per-model line come from the same samples.
    expect(await seriesFigures(latency, "p50")).toBeDefined();
    expect(await seriesFigures(latency, "p99")).toBeDefined();
    expect((await seriesFigures(perModel, "add_sub"))?.highest).toBeGreaterThan(0);
    expect(await drawnPoints(perModel)).toBeGreaterThan(0);
    for (const title of [
      "Error rate",
      "Queue time",
      "Instances per model",
      "CPU utilization per model",
      "Memory per model",
    ]) {
      await visible(chartFigure(page, title));
    }
    // Axes say their units.
    expect(await chartSurface(requests).textContent()).toContain("requests/s");
    expect(await chartSurface(latency).textContent()).toContain("latency (ms)");
    expect((await seriesFigures(chartFigure(page, "Instances per model"), "add_sub"))?.latest).toBe(2);

    // Instance counts jump and hold: drawn as steps (straight segments only), never as a curve through 1.5 instances.
    const instancePaths = await chartSurface(chartFigure(page, "Instances per model"))
      .locator("path.recharts-line-curve")
      .evaluateAll((paths) => paths.map((path) => path.getAttribute("d") ?? ""));
    expect(instancePaths.length).toBeGreaterThan(0);
    for (const d of instancePaths) expect(d).not.toMatch(/[CcQqSs]/);
    // Each line of a chart has its own colour, and p50 is not the requests line's colour either.
    const strokes = async (figure: typeof latency) =>
      chartSurface(figure)
        .locator("path.recharts-line-curve")
        .evaluateAll((paths) => paths.map((path) => path.getAttribute("stroke")));
    const latencyStrokes = await strokes(latency);
    expect(new Set(latencyStrokes).size).toBe(3);
    expect(latencyStrokes).not.toContain((await strokes(requests))[0]);
    // The error rate's axis ticks read apart (not "0 %" at each). Recharts draws ticks in a layer of their own, not
    // under their axis: the y axis' are the ones in percent.
    const errorTicks = (
      await chartSurface(chartFigure(page, "Error rate"))
        .locator(".recharts-cartesian-axis-tick-value")
        .allTextContents()
    ).filter((tick) => tick.endsWith("%"));
    expect(errorTicks.length).toBeGreaterThan(1);
    expect(new Set(errorTicks).size).toBe(errorTicks.length);

    // The same samples, costed on the host's profile.
    const costs = page.getByRole("table", { name: "Cost per model and hardware profile" });
    const addSubCost = costs
      .getByRole("row")
      .filter({ has: page.getByRole("rowheader", { name: "add_sub", exact: true }) });
    await visible(addSubCost);
    const cells = await addSubCost.getByRole("cell").allTextContents();
    expect(cells[0]).toBe("e2e host");
    expect(Number(cells[1]!.replace(/[^\d]/g, ""))).toBeGreaterThanOrEqual(INFERENCES);
    await visible(chartFigure(page, "Cost per hour on e2e host"));
    await visible(chartFigure(page, "Cost per 1M inferences on e2e host"));
    // One precision for money everywhere (cents, "< $0.01" below one), inference prices per million.
    const moneyCells = cells.slice(-5);
    for (const cell of moneyCells) expect(cell).toMatch(/^(\$\d[\d,]*\.\d\d|< \$0\.01|—)$/);
    expect(await costs.getByRole("columnheader", { name: /Cost per 1M inferences/ }).count()).toBe(1);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("switches the time range and still fits a narrow screen", async () => {
    const { page } = system.session;
    await page.getByRole("group", { name: "Time range" }).getByLabel("1 h", { exact: true }).check();
    await visible(heading(page, "Usage over the last 1 h"));
    const requests = chartFigure(page, "Requests per second");
    const figures = await pollUntil(
      () => seriesFigures(requests, "Requests/s"),
      (value) => value !== undefined && value.highest > 0,
      20_000,
    );
    expect(figures?.highest).toBeGreaterThan(0);

    await page.setViewportSize({ width: 390, height: 844 });
    await visible(page.getByRole("button", { name: "Menu" }));
    await visible(requests);
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    expect(await drawnPoints(requests)).toBeGreaterThan(0);
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
