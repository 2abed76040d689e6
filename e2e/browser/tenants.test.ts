import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { chartFigure, drawnPoints, pollUntil } from "./support/chart-reading.js";
import { heading, visible } from "./support/console-actions.js";
import { inferAddSub } from "./support/gateway-infer.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An admin's task: give a client its own share of capacity (a tenant with
// share 2, its key assigned to it), then see the tenant's use against its
// share. The tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const KEY_NAME = "batch client";

describe("console: tenants with shares, and their use against them", () => {
  let apiKey = "";
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--usage-sample-secs", "1"],
    prepare: async (operon) => {
      apiKey = await createInferKey(await signedInApiSession(operon, ADMIN), KEY_NAME);
    },
  });

  it("creates a tenant with a share and assigns a key to it", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tenants" }).click();
    await visible(heading(page, "Tenants"));

    await page.getByRole("button", { name: "Add tenant" }).click();
    const form = await visible(page.getByRole("form", { name: "Add a tenant" }));
    await form.getByLabel("Name", { exact: true }).fill("gold");
    // A share must be from 0.001 to 1000: the form says so at the field.
    await form.getByLabel("Share", { exact: true }).fill("0");
    await form.getByRole("button", { name: "Add tenant" }).click();
    await visible(form.getByText("a number from 0.001 to 1000, e.g. 2"));
    await form.getByLabel("Share", { exact: true }).fill("2");
    await form.getByRole("button", { name: "Add tenant" }).click();
    await form.waitFor({ state: "detached" });
    const row = await visible(page.getByRole("row", { name: /^gold/ }));
    expect(await row.getByRole("cell").allTextContents()).toEqual(expect.arrayContaining(["group", "2", "queued"]));

    const assign = page.getByRole("form", { name: "Assign a key to a tenant" });
    const keyOption = assign.getByLabel("API key").locator("option", { hasText: KEY_NAME });
    await assign.getByLabel("API key").selectOption((await keyOption.getAttribute("value"))!);
    await assign.getByLabel("Tenant").selectOption({ label: "gold" });
    await assign.getByRole("button", { name: "Assign key" }).click();
    await visible(assign.getByRole("status"));
    expect(await assign.getByRole("status").textContent()).toContain("now counts for gold");
    await visible(page.getByRole("row", { name: /^gold/ }).getByText(KEY_NAME, { exact: false }));
    expect(system.session.errors).toEqual([]);
  });

  it("shows each tenant's use against its share", async () => {
    const { page } = system.session;
    // Traffic from the tenant's key, and some without a key (the anonymous tenant, share 1).
    for (let i = 0; i < 20; i += 1) expect((await inferAddSub(system.operon.httpUrl, apiKey)).status).toBe(200);
    for (let i = 0; i < 10; i += 1) {
      const response = await fetch(`${system.operon.httpUrl}/v2/models/add_sub/infer`, {
        method: "POST",
        body: JSON.stringify({
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "FP32", data: Array(16).fill(1) },
            { name: "INPUT1", shape: [1, 16], datatype: "FP32", data: Array(16).fill(1) },
          ],
        }),
      });
      expect(response.status).toBe(200);
    }
    const section = page.getByRole("region", { name: "Use against share" });
    const goldRow = section.getByRole("row", { name: /^gold/ });
    // The control plane samples the gateway's counters every second here; the page reads them on load.
    await pollUntil(
      async () => {
        await page.reload();
        await visible(heading(page, "Tenants"));
        await section.getByRole("table").or(section.getByText("No tenant usage in this range yet")).first().waitFor();
        return (await goldRow.count()) > 0 && (await section.getByRole("row", { name: /^anonymous/ }).count()) > 0;
      },
      (ready) => ready,
      30_000,
    );
    const cells = await goldRow.getByRole("cell").allTextContents();
    // Share: 2 of the 3 shares of the tenants served; use: its part of the units served (about 2/3 of the requests here).
    expect(cells[0]).toBe("66.7 %");
    expect(Number.parseFloat(cells[1]!)).toBeGreaterThan(0);
    expect(cells[3]).toBe("20");
    const chart = await visible(chartFigure(section, "Use of the units served, per tenant"));
    expect(await chart.locator("figcaption").textContent()).toMatch(/gold \(share 67 %\): \d+ points?/);
    expect(await drawnPoints(chart)).toBeGreaterThan(0);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(system.session.errors).toEqual([]);
  });
});
