import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { accessibilityViolations } from "./support/accessibility.js";
import { signedInApiSession } from "./support/admin-api.js";
import { heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";
import { EXAMPLE_REPOSITORY } from "../support/operon-process.js";

// Issue 27 item 1 in the console: an image pipeline (its BYTES input must be a PNG) gets only failed perf reports
// from random bytes. Its page's "Perf inputs" takes an uploaded image as that input; the next run succeeds.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "perf-inputs-admin@example.com", password: "a long enough passphrase" };
const PNG = join(EXAMPLE_REPOSITORY, "..", "images", "text_0.png");
const MODEL = "text_direction_preprocess";

describe("console: perf inputs of an image pipeline", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  // The system is shared with other specs: the model's runs go back to random inputs (its automatic reports too),
  // whatever the tests below saved. Runs before the harness's afterAll (hooks run last-registered first).
  afterAll(async () => {
    const api = await signedInApiSession(system.operon, ADMIN);
    await api.client.perf.setInputs.mutate({
      target: { kind: "MODEL", name: MODEL },
      shapes: {},
      data: { kind: "random" },
    });
  });

  async function startRun(): Promise<void> {
    const { page } = system.session;
    await page.goto("/perf");
    await visible(heading(page, "Perf reports"));
    const form = page.getByRole("form", { name: "New run" });
    await form.getByLabel("Target", { exact: true }).selectOption(`MODEL:${MODEL}`);
    await form.getByLabel("From", { exact: true }).fill("1");
    await form.getByLabel("To", { exact: true }).fill("1");
    await form.getByLabel("Measurement interval (seconds)").fill("0.5");
    await form.getByRole("button", { name: "Start run" }).click();
  }

  it("with random bytes as its PNG input the run fails, and the perf list says why (item 10)", async () => {
    const { page } = system.session;
    await startRun();
    await visible(page.getByText(/^Failed/), 120_000);
    const row = await visible(page.getByRole("row").filter({ hasText: `model ${MODEL}` }));
    await visible(row.getByText(/PNG/i));
  }, 150_000);

  it("refuses a data file that does not fit, naming the input, then saves an uploaded PNG as the BYTES input", async () => {
    const { page } = system.session;
    await page.goto(`/models/${MODEL}`);
    await visible(heading(page, MODEL));
    const section = page.getByRole("form", { name: "Perf inputs" });
    await visible(section.getByRole("row").filter({ hasText: "image" }));
    expect(await section.getByRole("radio", { name: /^Random/ }).isChecked()).toBe(true);

    const wrong = join(tmpdir(), `perf-inputs-${Date.now()}.json`);
    writeFileSync(wrong, JSON.stringify({ data: [{ picture: ["x"] }] }));
    await section.getByRole("radio", { name: /A data file/ }).check();
    await section.getByLabel("Data file (JSON)").setInputFiles(wrong);
    await section.getByRole("button", { name: "Save perf inputs" }).click();
    await visible(section.getByText(/data\[0\]\.image is missing/));

    await section.getByRole("radio", { name: /An image, text or other file/ }).check();
    await section.getByLabel("File", { exact: true }).setInputFiles(PNG);
    await section.getByRole("button", { name: "Save perf inputs" }).click();
    await visible(section.getByRole("radio", { name: /Saved file text_0\.png/ }));
    expect(await section.getByRole("radio", { name: /Saved file text_0\.png/ }).isChecked()).toBe(true);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("has no accessibility violations in either scheme", async () => {
    const { page } = system.session;
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.waitForLoadState("networkidle");
      const violations = await accessibilityViolations(page);
      expect(violations, `${scheme}: ${violations.map((violation) => violation.id).join(", ")}`).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });
  }, 60_000);

  it("a perf run of it then succeeds with the image as its input; the report downloads as CSV and JSON", async () => {
    const { page } = system.session;
    await startRun();
    await visible(page.getByText(/^Succeeded: 1 of 1 steps? measured$/), 120_000);
    const api = await signedInApiSession(system.operon, ADMIN);
    const [report] = await api.client.perf.list.query({ targetName: MODEL, limit: 1 });
    expect(report).toMatchObject({ status: "SUCCEEDED", summary: { inputData: { kind: "file", name: "text_0.png" } } });

    await page.goto(`/perf/${report!.id}`);
    await visible(page.getByText(/image BYTES \[1, 1\]; values from text_0\.png/));
    const [csv] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download CSV" }).click(),
    ]);
    const lines = readFileSync((await csv.path())!, "utf8")
      .trim()
      .split("\n");
    expect(lines[0]).toMatch(/^concurrency,batch_size,throughput_infer_per_sec,/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^1,1,/);
    const [json] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download JSON" }).click(),
    ]);
    expect(JSON.parse(readFileSync((await json.path())!, "utf8"))).toMatchObject({
      id: report!.id,
      status: "SUCCEEDED",
    });
    expect(system.session.errors).toEqual([]);
  }, 150_000);
});
