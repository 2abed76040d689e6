import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "../support/api-client.js";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, type RunningOperon } from "../support/operon-process.js";

// Issue 28, item 11: engineers edited, unloaded and deleted each other's uploaded models and
// operators, cancelled each other's perf runs and config searches, and one engineer could queue
// 60 perf runs that held the measuring slot for hours.

const ADD_SUB = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx"));
const ALICE = { email: "alice@example.com", password: "the first engineer passphrase" };
const BOB = { email: "bob@example.com", password: "the second engineer passphrase" };

async function upload(session: ApiSession, name: string) {
  const begun = await session.client.models.upload.begin.mutate({
    name,
    fileName: "model.onnx",
    sizeBytes: ADD_SUB.length,
    sha256: createHash("sha256").update(ADD_SUB).digest("hex"),
  });
  await session.client.models.upload.chunk.mutate({
    uploadId: begun.uploadId,
    offset: 0,
    data: ADD_SUB.toString("base64"),
  });
  return session.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
}

const OPERATOR_SPEC = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "Y" } },
  ],
};

const notYours = (kind: string, name: string, owner: string) =>
  new RegExp(`^${kind} ${name} belongs to ${owner}: only its owner or an admin may change it$`);

describe("owners (and admins) change what they own; perf runs are bounded per user and in time", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let alice: ApiSession;
  let bob: ApiSession;
  beforeAll(async () => {
    server = await startControlPlaneServer();
    admin = await signedIn(server);
    // Automatic runs after each upload would take the measuring slot this test fills by hand.
    await admin.client.perf.updateSettings.mutate({ enabled: false });
    await admin.client.users.create.mutate({ ...ALICE, role: "ENGINEER" });
    await admin.client.users.create.mutate({ ...BOB, role: "ENGINEER" });
    alice = await signedIn(server, ALICE);
    bob = await signedIn(server, BOB);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("another engineer cannot edit, unload, load, delete or add a version to an uploaded model; its owner and admins can", async () => {
    await upload(alice, "alice_adder");
    const refused = notYours("model", "'alice_adder'", ALICE.email);
    for (const attempt of [
      bob.client.models.unload.mutate({ name: "alice_adder" }),
      bob.client.models.load.mutate({ name: "alice_adder" }),
      bob.client.models.delete.mutate({ name: "alice_adder" }),
      bob.client.models.updateConfig.mutate({ name: "alice_adder", config: { max_batch_size: 4 } }),
      bob.client.models.upload.begin.mutate({
        name: "alice_adder",
        fileName: "model.onnx",
        sizeBytes: ADD_SUB.length,
        sha256: createHash("sha256").update(ADD_SUB).digest("hex"),
      }),
      bob.client.configSearch.start.mutate({ model: "alice_adder", objective: "MAX_THROUGHPUT", p99BudgetMs: 100 }),
    ]) {
      const error = await apiErrorOf(attempt);
      expect(error.appCode).toBe("FORBIDDEN");
      expect(error.message).toMatch(refused);
    }
    expect((await bob.client.models.get.query({ name: "alice_adder" })).state).toBe("READY");
    await alice.client.models.unload.mutate({ name: "alice_adder" });
    await alice.client.models.load.mutate({ name: "alice_adder" });
    // An admin may change anything; ownership stays with the uploader.
    await admin.client.models.unload.mutate({ name: "alice_adder" });
    await upload(admin, "alice_adder");
    expect((await apiErrorOf(bob.client.models.delete.mutate({ name: "alice_adder" }))).message).toMatch(refused);
    await alice.client.models.delete.mutate({ name: "alice_adder" });
  });

  it("another engineer cannot update or delete an operator", async () => {
    await alice.client.operators.create.mutate({ name: "alice_op", spec: OPERATOR_SPEC });
    const refused = notYours("operator", "'alice_op'", ALICE.email);
    expect(
      await apiErrorOf(bob.client.operators.update.mutate({ name: "alice_op", spec: OPERATOR_SPEC })),
    ).toMatchObject({ appCode: "FORBIDDEN", message: expect.stringMatching(refused) });
    expect(await apiErrorOf(bob.client.operators.delete.mutate({ name: "alice_op" }))).toMatchObject({
      appCode: "FORBIDDEN",
      message: expect.stringMatching(refused),
    });
    await alice.client.operators.update.mutate({ name: "alice_op", spec: OPERATOR_SPEC });
    await alice.client.operators.delete.mutate({ name: "alice_op" });
  });

  it("another engineer cannot cancel a perf run; one user queues at most 3; a run must fit the time bound", async () => {
    const plan = (end: number) => ({
      target: { kind: "MODEL" as const, name: "add_sub" },
      concurrency: { start: 1, end, step: 1 },
      measurementIntervalMs: 2000,
    });
    // Alice's run holds the measuring slot (8 steps of at least 3 windows of 2 s) while the rest queue.
    const held = await alice.client.perf.start.mutate(plan(8));
    const refusedCancel = await apiErrorOf(bob.client.perf.cancel.mutate({ id: held.id }));
    expect(refusedCancel.appCode).toBe("FORBIDDEN");
    expect(refusedCancel.message).toMatch(
      new RegExp(
        `^perf run ${held.id} \\(of 'add_sub'\\) belongs to ${ALICE.email}: only its owner or an admin may change it$`,
      ),
    );

    const mine = [];
    for (const end of [1, 2, 3]) mine.push(await bob.client.perf.start.mutate(plan(end)));
    expect(mine.every((run) => run.status === "QUEUED" && !run.joined)).toBe(true);
    const fourth = await apiErrorOf(bob.client.perf.start.mutate(plan(4)));
    expect(fourth).toMatchObject({ appCode: "RATE_LIMITED", httpStatus: 429 });
    expect(fourth.message).toBe(
      "you have 3 perf runs queued or running, the most one user may have (3); wait for one to end or cancel one",
    );
    // Cancelling one of his own frees a place.
    await bob.client.perf.cancel.mutate({ id: mine[0]!.id });
    mine[0] = await bob.client.perf.start.mutate(plan(4));

    const endless = await apiErrorOf(alice.client.perf.start.mutate({ ...plan(16), measurementIntervalMs: 600_000 }));
    expect(endless.appCode).toBe("VALIDATION_FAILED");
    expect(endless.message).toMatch(
      /^this run would measure for at least 28800 s \(16 steps × 3 windows × 600000 ms\), beyond the 1800 s a run may take/,
    );

    for (const run of mine) await bob.client.perf.cancel.mutate({ id: run.id });
    await admin.client.perf.cancel.mutate({ id: held.id });
  });
});
