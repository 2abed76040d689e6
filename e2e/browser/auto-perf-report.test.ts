import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { signedInApiSession } from "./support/admin-api.js";
import { heading, visible, waitForPath } from "./support/console-actions.js";
import { writeTinyMlpFile } from "./support/model-files.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer uploads a model and, without starting anything, finds its
// perf report on the model's page; the next version's report is compared
// with the first on the version list. The plan is kept tiny (concurrency
// 1..2, short windows) so the runs take seconds. The tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const MODEL = "auto-mlp";

describe("console: an upload produces its perf report without anyone starting it", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      await api.client.perf.updateSettings.mutate({
        maxConcurrency: 2,
        measurementIntervalMs: 200,
        maxTrials: 3,
        timeBoundSecs: 20,
      });
    },
  });
  const file = writeTinyMlpFile(`${MODEL}.onnx`);

  it("uploads a model; its page shows the latest report queued or running, then succeeded with its numbers", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await visible(heading(page, "Models"));
    await page.getByRole("link", { name: "Upload model" }).click();
    await visible(heading(page, "Upload a model"));
    await page.getByLabel("Model file (.onnx)").setInputFiles(file.path);
    await visible(page.getByText(`Selected: ${MODEL}.onnx`));
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await visible(heading(page, "Configure"), 60_000);
    await page.getByRole("button", { name: "Finish upload" }).click();
    await waitForPath(page, `/models/${MODEL}`, 90_000);

    const latest = page.getByRole("region", { name: "Latest perf report" });
    await visible(latest);
    // Nobody starts it: the platform queued it after the upload.
    await visible(latest.getByText(/automatic \(model\.upload version 1\)/), 30_000);
    await visible(latest.getByText("Succeeded", { exact: true }), 90_000);
    expect(await latest.textContent()).toMatch(/Best: [\d,.]+ infer\/s at concurrency [12], p99 [\d,.]+ ms/);
    expect(await latest.textContent()).toMatch(/Host during the run: other traffic [\d,.]+ requests\/s/);

    await latest.getByRole("link", { name: "Open the latest report" }).click();
    await visible(heading(page, `Perf report: model ${MODEL} v1`));
    expect(await page.locator("dl.facts").textContent()).toContain("automatic (model.upload version 1)");

    // Why the sweep stopped where it did, as the run recorded it (issue 27 item 10): a plan of concurrency 1..2
    // ends on a plateau, at its highest concurrency, or at its time bound.
    const api = await signedInApiSession(system.operon, ADMIN);
    const stored = await api.client.perf.get.query({ id: new URL(page.url()).pathname.split("/").pop()! });
    const words: Record<string, RegExp> = {
      plateau: /^because the throughput stopped rising \(a step gained less than [\d.]+ %\)$/,
      "max-concurrency": /^because it reached the highest concurrency of the plan$/,
      "time-bound": /^because it reached the run's time bound \(the steps measured are kept\)$/,
    };
    const reason = stored.hostLoad?.stopReason ?? "none recorded";
    expect(Object.keys(words)).toContain(reason);
    const ended = page.locator("dl.facts .fact").filter({ has: page.getByText("Sweep ended", { exact: true }) });
    expect(await ended.locator("dd").textContent()).toMatch(words[reason]!);
    expect(system.session.errors).toEqual([]);
  }, 240_000);

  it("a second version is compared with the first on the version list", async () => {
    const { page } = system.session;
    const api = await signedInApiSession(system.operon, ADMIN);
    const bytes = readFileSync(file.path);
    const begun = await api.client.models.upload.begin.mutate({
      name: MODEL,
      fileName: `${MODEL}.onnx`,
      sizeBytes: bytes.length,
      sha256: file.sha256,
    });
    await api.client.models.upload.chunk.mutate({
      uploadId: begun.uploadId,
      offset: 0,
      data: bytes.toString("base64"),
    });
    expect(await api.client.models.upload.finish.mutate({ uploadId: begun.uploadId })).toMatchObject({ version: 2 });

    await page.goto(`/models/${MODEL}`);
    const versions = page.getByRole("table", { name: "Versions" });
    const row = await visible(versions.getByRole("row", { name: /^2 / }), 30_000);
    await visible(row.getByText(/^v2 is .* at c\d (than|as) v1/), 120_000);
    expect(system.session.errors).toEqual([]);
  }, 240_000);
});
