import { describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { signedInApiSession } from "./support/admin-api.js";
import { heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task (issue 21): read an operator's perf report step by step.
// A two-step operator (add_sub twice: Y = A + 2B) is measured; its report
// page draws each step's average time as a waterfall (the second starts where
// the first ends). Its own system: it measures, which loads the host.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const OPERATOR = "add_twice_steps";
const SPEC = {
  maxBatchSize: 8,
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "sum" } },
    {
      id: "second",
      kind: "model",
      model: "add_sub",
      inputs: { INPUT0: "sum", INPUT1: "B" },
      outputs: { OUTPUT0: "Y" },
    },
  ],
};

describe("console: an operator's perf report covers its steps", () => {
  const system = useSignedInConsole({ admin: ADMIN });

  it("measures a two-step operator and draws its steps as a waterfall, axe-clean in both schemes", async () => {
    const api = await signedInApiSession(system.operon, ADMIN);
    // A run of our own, small and now: the operator's automatic run would first wait for an idle host.
    await api.client.perf.updateSettings.mutate({ enabled: false });
    await api.client.operators.create.mutate({ name: OPERATOR, spec: SPEC });
    const { id } = await api.client.perf.start.mutate({
      target: { kind: "OPERATOR", name: OPERATOR },
      concurrency: { start: 1, end: 2, step: 1 },
      measurementIntervalMs: 500,
      maxTrials: 3,
    });
    const deadline = Date.now() + 120_000;
    let report = await api.client.perf.get.query({ id });
    while ((report.status === "QUEUED" || report.status === "RUNNING") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      report = await api.client.perf.get.query({ id });
    }
    expect(report.status).toBe("SUCCEEDED");
    const stored = report.samples.map((sample) => sample.stepTimes?.map((step) => step.step));
    expect(stored).toEqual([
      ["first", "second"],
      ["first", "second"],
    ]);

    const { page } = system.session;
    await page.goto(`/perf/${id}`);
    await visible(heading(page, `Perf report: operator ${OPERATOR} v1`));
    const steps = await visible(page.getByRole("region", { name: "Steps" }));
    // The best throughput's concurrency first; the other one a pick away.
    const best = report.samples.reduce((a, b) => (b.throughput > a.throughput ? b : a));
    await visible(steps.getByText(`Time per step (ms) at concurrency ${best.concurrency}`));
    const rows = steps.locator(".timeline-row");
    expect(await rows.count()).toBe(2);
    const [first, second] = best.stepTimes!;
    expect(await rows.nth(0).textContent()).toMatch(
      /^first.*model add_sub.*start 0 ms, duration [\d.,]+ ms, [\d,]+ runs$/,
    );
    expect(await rows.nth(1).textContent()).toMatch(/^second.*model add_sub.*start [\d.,]+ ms, duration [\d.,]+ ms/);
    expect(second!.startUs).toBe(first!.durationUs);
    // The second bar starts where the first ends, on the drawn scale too.
    const [bar1, bar2] = [
      await rows.nth(0).locator(".timeline-bar").boundingBox(),
      await rows.nth(1).locator(".timeline-bar").boundingBox(),
    ];
    expect(Math.abs(bar1!.x + bar1!.width - bar2!.x)).toBeLessThan(2);

    const other = report.samples.find((sample) => sample.concurrency !== best.concurrency)!;
    await steps.getByLabel("Concurrency", { exact: true }).selectOption(String(other.concurrency));
    await visible(steps.getByText(`Time per step (ms) at concurrency ${other.concurrency}`));
    for (const scheme of ["dark", "light"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      expect(await accessibilityViolations(page), scheme).toEqual([]);
    }
    expect(system.session.errors).toEqual([]);
  }, 240_000);
});
