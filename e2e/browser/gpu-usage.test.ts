import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/operon-process.js";
import { accessibilityViolations } from "./support/accessibility.js";
import { createInferKey, signedInApiSession } from "./support/admin-api.js";
import { chartFigure, pollUntil, seriesFigures } from "./support/chart-reading.js";
import { heading, visible } from "./support/console-actions.js";
import { inferAddSub } from "./support/gateway-infer.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An operator on a GPU host sees the GPUs' use and what it costs. This host has
// no GPU: the server loads a fake libnvidia-ml.so.1 (native/test-fixtures/
// fake-nvml.cc: NVML's real entry points with fixed readings) through
// OPERON_NVML_LIB, so the whole path runs for real: NVML → the gateway's
// workers endpoint → the usage sampler (every second) → the database → the
// charts and costs. The example models run on the CPU (KIND_GPU instances are
// refused without a GPU), so their attributed GPU share is 0 % and their GPU
// cost $0; non-zero shares are covered by gpu-share.test.ts and the metrics
// router's test. The tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const PROFILE = "e2e gpu host";

const fakeNvml = (() => {
  const path = join(mkdtempSync(join(tmpdir(), "operon-fake-nvml-")), "libnvidia-ml.so.1");
  execFileSync(process.env.CXX || "g++", [
    "-shared",
    "-fPIC",
    "-O1",
    "-o",
    path,
    join(REPO_ROOT, "native/test-fixtures/fake-nvml.cc"),
  ]);
  return path;
})();

describe("console: GPU use and GPU cost (fake NVML)", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--usage-sample-secs", "1"],
    env: { OPERON_NVML_LIB: fakeNvml },
  });

  it("an admin adds a GPU profile with its GPU share of the price, and the costs split CPU and GPU", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Hardware & cost" }).click();
    await visible(heading(page, "Hardware & cost"));
    await page.getByRole("button", { name: "Add profile" }).click();
    const form = await visible(page.getByRole("form", { name: "Add a hardware profile" }));
    await form.getByLabel("Name", { exact: true }).fill(PROFILE);
    await form.getByLabel("Kind").selectOption("GPU");
    await form.getByLabel("GPU model (optional)").fill("H200");
    await form.getByLabel("GPU count").fill("2");
    await form.getByLabel("GPU share of the price, % (optional)").fill("150");
    await form.getByLabel("Cost per hour").fill("7.2");
    await form.getByRole("button", { name: "Add profile" }).click();
    // Over 100 %: the API refuses it at the field.
    await visible(form.getByText(/less than or equal to 1|at most 1|too big/i));
    await form.getByLabel("GPU share of the price, % (optional)").fill("75");
    await form.getByRole("button", { name: "Add profile" }).click();
    await visible(
      page.getByRole("table", { name: "Hardware profiles" }).getByRole("row", { name: new RegExp(PROFILE) }),
    );
    const api = await signedInApiSession(system.operon, ADMIN);
    const [profile] = await api.client.hardware.list.query();
    expect(profile).toMatchObject({ name: PROFILE, kind: "GPU", gpuCount: 2, gpuPriceShare: 0.75 });

    // Traffic, sampled every second and costed on the GPU profile.
    const key = await createInferKey(api, "e2e gpu traffic");
    for (let i = 0; i < 20; i += 1) expect((await inferAddSub(system.operon.httpUrl, key)).status).toBe(200);
    const costs = page.getByRole("region", { name: "Costs" });
    await visible(costs.getByText(/the part of the price that pays for the\s+GPUs/));
    const table = costs.getByRole("table", { name: "Cost per model and operator" });
    const deadline = Date.now() + 90_000;
    while ((await table.count()) === 0 && Date.now() < deadline) {
      await page.waitForTimeout(3_000);
      await page.reload();
      await visible(heading(page, "Hardware & cost"));
      await visible(costs.locator(".state, .profile-cost").first(), 20_000);
    }
    const row = await visible(table.getByRole("row", { name: /^add_sub / }));
    const cells = Object.fromEntries(
      await Promise.all(
        ["CPU cost", "GPU cost", "GPU share (host-hours)"].map(async (label) => [
          label,
          (await row.locator(`[data-label="${label}"]`).textContent())?.trim(),
        ]),
      ),
    );
    // add_sub runs on the CPU: its GPU share is 0 and all its cost is CPU cost.
    expect(cells["GPU cost"]).toMatch(/^\$0(\.0+)?$/);
    // Money at the currency's precision: a short run's CPU cost may be below a cent ("< $0.01").
    expect(cells["CPU cost"]).toMatch(/^(< )?\$\d/);
    expect(cells["GPU share (host-hours)"]).toMatch(/^0(\.0+)?$/);
    expect(system.session.errors).toEqual([]);
  }, 180_000);

  it("draws GPU utilization and GPU memory per model from the sampled GPU readings, axe-clean", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
    await visible(heading(page, "Overview"));
    const gpu = chartFigure(page, "GPU utilization per model");
    const readGpu = async () => {
      await page.getByRole("button", { name: "Refresh now" }).click();
      await page.getByText("refreshing…").waitFor({ state: "detached" });
      return (await gpu.count()) > 0 ? seriesFigures(gpu, "add_sub") : undefined;
    };
    const figures = await pollUntil(readGpu, (value) => value !== undefined && value.points > 0, 60_000, 1000);
    expect(figures).toMatchObject({ latest: 0, highest: 0 });
    await visible(chartFigure(page, "GPU memory per model"));
    await visible(chartFigure(page, "CPU utilization per model"));
    const overviewCosts = page.getByRole("table", { name: "Cost per model and hardware profile" });
    await visible(overviewCosts.getByRole("columnheader", { name: "GPU cost" }));
    await page.waitForLoadState("networkidle");
    const violations = await accessibilityViolations(page);
    expect(violations.map((v) => `${v.rule}: ${v.where.join(", ")}`)).toEqual([]);
    expect(system.session.errors).toEqual([]);
  }, 120_000);
});
