import { describe, expect, it } from "vitest";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { chartFigure, pollUntil } from "./support/chart-reading.js";
import { heading, visible } from "./support/console-actions.js";
import { inferAddSubUntil } from "./support/gateway-infer.js";
import { useSignedInConsole } from "./support/signed-in-console.js";
import { contrastRatio, midWordBreaks } from "./support/text-layout.js";

// What a new admin notices in the first hour with the console: numbers that
// claim more than was measured, words cut in half, markup shown as text,
// ids where names belong. The tests run in order on one server.
const ADMIN = { email: "ada@example.com", password: "a long enough passphrase" };
const KEY_NAME = "first-hour client";

describe("console: the first hour's numbers and words", () => {
  let apiKey = "";
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--usage-sample-secs", "1"],
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      apiKey = await createInferKey(api, KEY_NAME);
    },
  });

  it("shows no latency for a model that has served no request", async () => {
    const { page } = system.session;
    await visible(heading(page, "Overview"));
    const liveTable = await visible(page.getByRole("table", { name: "Live numbers per model version" }));
    const idle = liveTable
      .getByRole("row")
      .filter({ has: page.getByRole("rowheader", { name: "identity_bytes", exact: true }) });
    const cells = await visible(idle.getByRole("cell"));
    expect(await cells.nth(1).textContent()).toBe("0");
    expect(await cells.nth(4).textContent()).toBe("—");
    expect(await cells.nth(5).textContent()).toBe("—");
    expect(system.session.errors).toEqual([]);
  });

  it("says what the latency chart's percentiles are over a long range", async () => {
    const { page } = system.session;
    // Some traffic for the sampler (every second here), so the chart has points.
    for (let sent = 0; sent < 5; sent += 1)
      expect((await inferAddSubUntil(system.operon.httpUrl, apiKey, 200)).status).toBe(200);
    const latency = chartFigure(page, "Request latency");
    await pollUntil(
      async () => {
        await page.getByRole("button", { name: "Refresh now" }).click();
        await page.getByText("refreshing…").waitFor({ state: "detached" });
        return latency.count();
      },
      (count) => count > 0,
      30_000,
      1000,
    );
    expect(await latency.textContent()).toMatch(/request-weighted mean of the 15-second p50, p95 and p99/);
  });

  it("wraps names and values at sensible points at 1440 px", async () => {
    const { page } = system.session;
    await page.setViewportSize({ width: 1440, height: 900 });
    const found: Record<string, unknown> = {};
    for (const [path, title] of [
      ["/users", "Users"],
      ["/account", "Your account"],
      ["/api-keys", "API keys"],
      ["/audit", "Audit"],
      ["/models/add_sub", "add_sub"],
      ["/models/text_direction_classifier", "text_direction_classifier"],
      ["/workers", "Workers"],
    ] as const) {
      await page.goto(path);
      await visible(heading(page, title));
      await page.locator("main table, main dl").first().waitFor({ state: "visible" });
      const breaks = await midWordBreaks(page.locator("main"));
      if (breaks.length > 0) found[path] = breaks;
    }
    expect(found).toEqual({});
  });

  it("writes code as code, never as raw backticks", async () => {
    const { page } = system.session;
    for (const [path, title] of [
      ["/perf", "Perf reports"],
      ["/hardware", "Hardware & cost"],
      ["/models/add_sub", "add_sub"],
    ] as const) {
      await page.goto(path);
      await visible(heading(page, title));
      await page.waitForLoadState("networkidle");
      expect(await page.locator("main").innerText(), path).not.toContain("`");
    }
    await page.goto("/perf");
    await visible(page.locator("main p code", { hasText: "operon perf" }));
  });

  it("names the objects in the audit log and links to them", async () => {
    const { page } = system.session;
    await page.goto("/audit");
    await visible(heading(page, "Audit"));
    const created = page.getByRole("row").filter({ has: page.getByText("apiKey.create", { exact: true }) });
    const link = await visible(created.getByRole("link", { name: KEY_NAME }));
    expect(await link.getAttribute("href")).toBe("/api-keys");
    const signIn = page
      .getByRole("row")
      .filter({ has: page.getByText("auth.signIn", { exact: true }) })
      .first();
    expect(await signIn.getByRole("link", { name: ADMIN.email }).getAttribute("href")).toBe("/users");
    expect(await page.locator("main").innerText()).not.toMatch(/ApiKey [0-9a-f]{8}-/);
  });

  it("keeps the header's links readable while pointed at", async () => {
    const { page } = system.session;
    const banner = page.getByRole("banner");
    const account = banner.getByRole("link", { name: new RegExp(ADMIN.email) });
    for (const link of [account, banner.getByRole("link", { name: "Operon" })]) {
      await link.hover();
      const [color, background] = await link.evaluate((element) => {
        const header = element.closest("header")!;
        return [getComputedStyle(element).color, getComputedStyle(header).backgroundColor];
      });
      expect(contrastRatio(color, background), `${color} on ${background}`).toBeGreaterThanOrEqual(4.5);
    }
    await page.goto("/account");
    await visible(heading(page, "Your account"));
    await page.mouse.move(600, 600);
    expect(await account.getAttribute("aria-current")).toBe("page");
    const [color, background] = await account.evaluate((element) => [
      getComputedStyle(element).color,
      getComputedStyle(element.closest("header")!).backgroundColor,
    ]);
    expect(contrastRatio(color, background), `${color} on ${background}`).toBeGreaterThanOrEqual(4.5);
  });
});
