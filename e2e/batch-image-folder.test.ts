import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { REPO_ROOT, type RunningOperon } from "./support/operon-process.js";
import { parquetRows } from "./support/parquet-rows.js";

/**
 * A batch job over a folder of images on the server (issue 24), through the
 * real server: an admin makes a dataset of a folder under the allowed root
 * (one row per image: its path and size; links are not followed, other files
 * left out), an engineer may not, a folder outside the roots is refused; a
 * job maps the `path` column to the `text_direction` ensemble's BYTES input
 * (PNG -> TypeScript preprocessing -> ONNX classifier -> top-k) and every
 * image gets its label in the results.
 */
const IMAGES = join(REPO_ROOT, "examples/images");
// What the classifier reads in each fixture (e2e/image-classification.test.ts checks them against a reference).
const EXPECTED: Record<string, string> = {
  "more/upright-copy.png": "0°",
  "text_0.png": "0°",
  "text_180.png": "180°",
  "text_grey.png": "0°",
};
const ENGINEER = { email: "ivy@example.com", password: "violet-harbor-lantern-94" };

describe("batch jobs over a folder of images (real server)", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let engineer: ApiSession;
  let folder: string;

  beforeAll(async () => {
    server = await startControlPlaneServer(
      [
        "--load-model",
        "text_direction_preprocess",
        "--load-model",
        "text_direction_classifier",
        "--load-model",
        "text_direction_topk",
        "--load-model",
        "text_direction",
        "--batch-budget-ms",
        "200",
      ],
      { timeoutMs: 150_000 },
    );
    admin = await signedIn(server);
    await admin.client.users.create.mutate({ ...ENGINEER, role: "ENGINEER" });
    engineer = await signedIn(server, ENGINEER);
    // Under <data-dir>/datasets, the default allowed root.
    folder = join(server.dataDir, "datasets", "scans");
    mkdirSync(join(folder, "more"), { recursive: true });
    for (const name of ["text_0.png", "text_180.png", "text_grey.png"])
      copyFileSync(join(IMAGES, name), join(folder, name));
    copyFileSync(join(IMAGES, "text_0.png"), join(folder, "more", "upright-copy.png"));
    writeFileSync(join(folder, "README.txt"), "not an image: left out\n");
    // A link to an image outside the allowed root: not followed, so not a row.
    const outside = mkdtempSync(join(tmpdir(), "operon-outside-"));
    copyFileSync(join(IMAGES, "text_180.png"), join(outside, "elsewhere.png"));
    symlinkSync(join(outside, "elsewhere.png"), join(folder, "escape.png"));
  }, 200_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("makes a dataset of the folder's images for admins only, inside the allowed roots", async () => {
    const engineerTry = await apiErrorOf(
      engineer.client.datasets.create.mutate({ name: "scans", file: { kind: "serverPath", path: folder } }),
    );
    expect(engineerTry).toMatchObject({ appCode: "FORBIDDEN", message: expect.stringMatching(/only admins/) });
    const outsideTry = await apiErrorOf(
      admin.client.datasets.create.mutate({ name: "scans", file: { kind: "serverPath", path: tmpdir() } }),
    );
    expect(outsideTry.message).toMatch(/outside the folders datasets may read/);

    const created = await admin.client.datasets.create.mutate({
      name: "scans",
      file: { kind: "serverPath", path: folder },
      keyColumns: ["path"],
    });
    expect(created.format).toBe("IMAGE_FOLDER");
    expect(created.preview.columns).toEqual([
      { name: "path", type: "VARCHAR" },
      { name: "size_bytes", type: "BIGINT" },
    ]);
    expect(created.preview.rowCount).toBe(4);
    expect(created.preview.rows.map((row) => row["path"])).toEqual(Object.keys(EXPECTED));
    expect(Number(created.preview.rows[0]!["size_bytes"])).toBeGreaterThan(0);
  });

  it("runs the text_direction pipeline over every image, each row with its label", async () => {
    const [dataset] = await admin.client.datasets.list.query();
    expect(dataset?.name).toBe("scans");
    const job = await admin.client.jobs.create.mutate({
      datasetId: dataset!.id,
      target: { kind: "OPERATOR", name: "text_direction" },
      mapping: [{ input: "image", kind: "image-path", column: "path" }],
    });
    const deadline = Date.now() + 120_000;
    let done = await admin.client.jobs.get.query({ id: job.id });
    while (done.state !== "DONE" && done.state !== "FAILED" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      done = await admin.client.jobs.get.query({ id: job.id });
    }
    expect(done).toMatchObject({ state: "DONE", totalRows: 4, doneRows: 4, failedRows: 0 });

    const cookie = [...admin.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const response = await fetch(`${server.apiUrl}/api/jobs/${job.id}/result.parquet`, { headers: { cookie } });
    expect(response.status).toBe(200);
    const file = join(server.dataDir, "scans-result.parquet");
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const rows = await parquetRows(file);
    expect(rows.map((row) => [row["path"], row["label"]])).toEqual(Object.entries(EXPECTED));
    for (const row of rows) expect(Number(row["score"])).toBeGreaterThan(0.5);
  }, 150_000);
});
