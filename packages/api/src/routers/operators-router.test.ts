import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, Prisma } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { createInProcessContext } from "../context.js";
import { createCaller } from "../root.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));

/** add_sub twice: Y = A + 2B (the README's example). */
function addTwice(): Record<string, unknown> {
  return {
    maxBatchSize: 8,
    inputs: [
      { name: "A", datatype: "FP32", dims: [16] },
      { name: "B", datatype: "FP32", dims: [16] },
    ],
    outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
    steps: [
      {
        id: "first",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "A", INPUT1: "B" },
        outputs: { OUTPUT0: "sum" },
      },
      {
        id: "second",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "sum", INPUT1: "B" },
        outputs: { OUTPUT0: "Y" },
      },
    ],
  };
}

/** Y = A − B, one step with a circuit breaker: the "second version" of an operator. */
function subtractOnce(): Record<string, unknown> {
  return {
    maxBatchSize: 8,
    inputs: [
      { name: "A", datatype: "FP32", dims: [16] },
      { name: "B", datatype: "FP32", dims: [16] },
    ],
    outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
    steps: [
      {
        id: "minus",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "A", INPUT1: "B" },
        outputs: { OUTPUT1: "Y" },
        circuitBreaker: { failureThreshold: 3 },
      },
    ],
  };
}

function withCycle(): Record<string, unknown> {
  const spec = addTwice();
  // first now reads what second produces: first -> second -> first.
  (spec["steps"] as Array<Record<string, unknown>>)[0]!["inputs"] = { INPUT0: "A", INPUT1: "Y" };
  return spec;
}

function withUnknownModel(): Record<string, unknown> {
  const spec = addTwice();
  (spec["steps"] as Array<Record<string, unknown>>)[1]!["model"] = "no_such_model";
  return spec;
}

/** add_sub's FP32 output fed to identity_bytes' BYTES input. */
function withDtypeMismatch(): Record<string, unknown> {
  return {
    maxBatchSize: 4,
    inputs: [
      { name: "A", datatype: "FP32", dims: [16] },
      { name: "B", datatype: "FP32", dims: [16] },
    ],
    outputs: [{ name: "Y", datatype: "BYTES", dims: [-1] }],
    steps: [
      { id: "add", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "sum" } },
      { id: "echo", kind: "model", model: "identity_bytes", inputs: { INPUT0: "sum" }, outputs: { OUTPUT0: "Y" } },
    ],
  };
}

const ones = new Array<number>(16).fill(1);
const twos = new Array<number>(16).fill(2);
const tryInputs = [
  { name: "A", datatype: "FP32", shape: [1, 16], data: ones },
  { name: "B", datatype: "FP32", shape: [1, 16], data: twos },
];

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway({
    modelRepositories: [EXAMPLES],
    loadModels: [
      "add_sub",
      "identity_bytes",
      "text_direction_preprocess",
      "text_direction_classifier",
      "text_direction_topk",
      "text_direction",
    ],
  });
});
afterAll(async () => {
  await gateway?.stop();
});

describe.each(testDatabaseBackends({ migrated: true }))("operators router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  // The gateway is shared by both database runs: names of their own keep them apart.
  const name = (base: string): string => `${base}_${backend.name}`;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db, { gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl } });
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  const served = async (operator: string) =>
    (await h.controlPlane.services.gateway.listOperators()).find((entry) => entry.name === operator);

  it("validates a spec through the gateway's dry run, naming cycles, unknown models and dtype mismatches", async () => {
    const viewer = h.as("VIEWER");
    expect(await viewer.operators.validate({ spec: { ...addTwice(), name: name("draft") } })).toEqual({
      valid: true,
      problems: [],
    });
    const cycle = await viewer.operators.validate({ name: name("draft"), spec: withCycle() });
    expect(cycle.valid).toBe(false);
    expect(cycle.problems.map((problem) => problem.message).join("\n")).toMatch(/cycle: .*'first'.*'second'/);
    const unknown = await viewer.operators.validate({ name: name("draft"), spec: withUnknownModel() });
    expect(unknown.problems.map((problem) => problem.message).join("\n")).toContain("model 'no_such_model'");
    const mismatch = await viewer.operators.validate({ name: name("draft"), spec: withDtypeMismatch() });
    expect(mismatch.problems.map((problem) => problem.message).join("\n")).toMatch(
      /datatype FP32 does not match BYTES/,
    );
    const narrow = addTwice();
    (narrow["inputs"] as Array<Record<string, unknown>>)[0]!["dims"] = [8];
    const shape = await viewer.operators.validate({ name: name("draft"), spec: narrow });
    expect(shape.problems.map((problem) => problem.message).join("\n")).toMatch(
      /tensor 'A' .*shape \[-1,8\] does not match \[-1,16\]/,
    );
    expect(await served(name("draft"))).toBeUndefined();
  });

  it("stores nothing and registers nothing for an invalid spec, and names the problems", async () => {
    const engineer = h.as("ENGINEER");
    for (const [label, spec, pattern] of [
      ["cycle", withCycle(), /cycle/],
      ["unknown", withUnknownModel(), /no_such_model/],
      ["mismatch", withDtypeMismatch(), /FP32 does not match BYTES/],
    ] as const) {
      const operator = name(`bad_${label}`);
      const failure = engineer.operators.create({ name: operator, spec });
      await expect(failure).rejects.toThrow(pattern);
      expect(await appCodeOf(engineer.operators.create({ name: operator, spec }))).toBe("VALIDATION_FAILED");
      expect(await db.prisma.operator.count({ where: { name: operator } })).toBe(0);
      expect(await served(operator)).toBeUndefined();
    }
    // A repository model's name is refused by the gateway, nothing stored.
    expect(await appCodeOf(engineer.operators.create({ name: "add_sub", spec: addTwice() }))).toBe("VALIDATION_FAILED");
    expect(await db.prisma.operator.count({ where: { name: "add_sub" } })).toBe(0);
    // Input mistakes are named.
    await expect(engineer.operators.create({ name: "bad name!", spec: addTwice() })).rejects.toThrow(/letters, digits/);
    await expect(engineer.operators.create({ name: "new", spec: { ...addTwice(), name: "new" } })).rejects.toThrow(
      /'new' is the name of the console's page for new operators/,
    );
    expect(await db.prisma.operator.count({ where: { name: "new" } })).toBe(0);
    await expect(
      engineer.operators.create({ name: name("other"), spec: { ...addTwice(), name: "not_this" } }),
    ).rejects.toThrow(/differs from the operator name/);
  });

  it("creates, serves, tries, updates and deletes an operator, auditing each change", async () => {
    const engineer = h.as("ENGINEER");
    const operator = name("add_twice");
    const created = await engineer.operators.create({ name: operator, description: "A + 2B", spec: addTwice() });
    expect(created).toMatchObject({
      name: operator,
      description: "A + 2B",
      source: "api",
      stored: true,
      latestVersion: 1,
      state: "SERVED",
      models: ["add_sub"],
      stepCount: 2,
    });
    expect(created.owner?.email).toBe("engineer@example.com");
    expect(created.versions.map((version) => version.version)).toEqual([1]);
    expect((await served(operator))?.source).toBe("api");

    const run = await engineer.operators.tryRun({ name: operator, inputs: tryInputs });
    const y = run.outputs.find((output) => (output as { name: string }).name === "Y") as { data: number[] };
    expect(y.data).toEqual(new Array<number>(16).fill(5));
    expect(run.latencyMs).toBeGreaterThan(0);
    expect(run.steps.map((step) => step.name)).toEqual(["first", "second"]);
    for (const step of run.steps) {
      expect(step.model).toBe("add_sub");
      expect(step.durationUs).toBeGreaterThanOrEqual(0);
      expect(step.endUs).toBe(step.startUs! + step.durationUs!);
    }
    // second waits for first's output.
    expect(run.steps[1]!.startUs!).toBeGreaterThanOrEqual(run.steps[0]!.endUs! - 1);
    // Each step's outputs, named as on the operator's board: first's sum = A + B, second's Y = sum + B.
    expect(run.steps.map((step) => step.outputs)).toEqual([
      [{ name: "sum", datatype: "FP32", shape: [1, 16], data: ones.map((a, i) => a + twos[i]!), truncated: false }],
      [{ name: "Y", datatype: "FP32", shape: [1, 16], data: y.data, truncated: false }],
    ]);

    const updated = await engineer.operators.update({ name: operator, spec: subtractOnce() });
    expect(updated.latestVersion).toBe(2);
    expect(updated.description).toBe("A + 2B");
    // The breaker of each step that has one, as the gateway's served version holds it (version 1 had none).
    expect(created.breakers).toEqual([]);
    expect(updated.breakers).toEqual([{ step: "minus", state: "closed" }]);
    const after = await engineer.operators.tryRun({ name: operator, inputs: tryInputs });
    expect((after.outputs[0] as { data: number[] }).data).toEqual(new Array<number>(16).fill(-1));
    const versions = await h.as("VIEWER").operators.versions({ name: operator });
    expect(versions.map((version) => version.version)).toEqual([2, 1]);
    expect((versions[1]!.spec["steps"] as unknown[]).length).toBe(2);
    // An update the gateway refuses leaves version 2 stored and served.
    expect(await appCodeOf(engineer.operators.update({ name: operator, spec: withUnknownModel() }))).toBe(
      "VALIDATION_FAILED",
    );
    expect((await h.as("VIEWER").operators.get({ name: operator })).latestVersion).toBe(2);

    await engineer.operators.delete({ name: operator });
    expect(await db.prisma.operator.count({ where: { name: operator } })).toBe(0);
    expect(await db.prisma.operatorVersion.count()).toBe(0);
    expect(await served(operator)).toBeUndefined();
    expect(await appCodeOf(engineer.operators.get({ name: operator }))).toBe("NOT_FOUND");

    const { events } = await h.as("ADMIN").audit.list({ action: "operator.", limit: 50 });
    expect(events.map((event) => event.action).reverse()).toEqual([
      "operator.create",
      "operator.update",
      "operator.delete",
    ]);
    expect(events.every((event) => event.actorEmail === "engineer@example.com")).toBe(true);
  });

  it("lists stored operators with the repository's ensembles, and reads an ensemble", async () => {
    const operator = name("listed");
    await h.as("ADMIN").operators.create({ name: operator, spec: addTwice() });
    const list = await h.as("VIEWER").operators.list();
    expect(list.find((entry) => entry.name === operator)).toMatchObject({
      source: "api",
      stored: true,
      latestVersion: 1,
      state: "SERVED",
    });
    expect(list.find((entry) => entry.name === "text_direction")).toMatchObject({
      source: "repository",
      stored: false,
      latestVersion: null,
      state: "SERVED",
      models: ["text_direction_preprocess", "text_direction_classifier", "text_direction_topk"],
    });
    const ensemble = await h.as("VIEWER").operators.get({ name: "text_direction" });
    expect(ensemble.source).toBe("repository");
    expect((ensemble.spec["steps"] as unknown[]).length).toBe(3);
    expect(await appCodeOf(h.as("ADMIN").operators.delete({ name: "text_direction" }))).toBe("VALIDATION_FAILED");
    expect(await appCodeOf(h.as("ADMIN").operators.create({ name: operator, spec: addTwice() }))).toBe("CONFLICT");
    await h.as("ADMIN").operators.delete({ name: operator });
  });

  it("tries an image pipeline with a file's raw bytes as a base64 BYTES input, and refuses base64 elsewhere (issue 27 item 6)", async () => {
    const engineer = h.as("ENGINEER");
    const png = readFileSync(join(EXAMPLES, "../images/text_180.png")).toString("base64");
    const run = await engineer.operators.tryRun({
      name: "text_direction",
      inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], data: [png], encoding: "base64" }],
    });
    expect(run.outputs.find((output) => (output as { name: string }).name === "label")).toMatchObject({
      data: ["180°"],
    });
    expect(run.steps.map((step) => step.model)).toEqual([
      "text_direction_preprocess",
      "text_direction_classifier",
      "text_direction_topk",
    ]);
    const refused = engineer.operators.tryRun({
      name: "text_direction",
      inputs: [{ name: "image", datatype: "FP32", shape: [1, 1], data: [png], encoding: "base64" }],
    });
    await expect(refused).rejects.toThrow("input 'image': base64 data is for BYTES inputs, not FP32");
    const notBase64 = engineer.operators.tryRun({
      name: "text_direction",
      inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], data: ["not base64!"], encoding: "base64" }],
    });
    await expect(notBase64).rejects.toThrow("each element must be base64");
  });

  it("lets viewers read but not change or run operators", async () => {
    const viewer = h.as("VIEWER");
    expect(await appCodeOf(viewer.operators.create({ name: name("nope"), spec: addTwice() }))).toBe("FORBIDDEN");
    expect(await appCodeOf(viewer.operators.update({ name: name("nope"), spec: addTwice() }))).toBe("FORBIDDEN");
    expect(await appCodeOf(viewer.operators.delete({ name: name("nope") }))).toBe("FORBIDDEN");
    expect(await appCodeOf(viewer.operators.tryRun({ name: "text_direction", inputs: tryInputs }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as(null).operators.list())).toBe("UNAUTHENTICATED");
    expect(await served(name("nope"))).toBeUndefined();
  });

  it("unregisters again when the database write fails after the gateway accepted", async () => {
    // An account deleted while its session was still open: the owner's foreign key fails the insert.
    const ghost = createCaller(
      createInProcessContext(h.controlPlane.services, {
        id: randomUUID(),
        email: "ghost@example.com",
        name: null,
        role: "ENGINEER",
      }),
    );
    const operator = name("orphan");
    await expect(ghost.operators.create({ name: operator, spec: addTwice() })).rejects.toThrow();
    expect(await db.prisma.operator.count({ where: { name: operator } })).toBe(0);
    expect(await served(operator)).toBeUndefined();
  });

  it("re-registers stored operators with a gateway that lost them, and reports those it cannot", async () => {
    const operator = name("synced");
    await h.as("ENGINEER").operators.create({ name: operator, spec: addTwice() });
    await h.controlPlane.services.gateway.unregisterOperator(operator);
    expect((await h.as("VIEWER").operators.get({ name: operator })).state).toBe("NOT_SERVED");
    // A stored spec whose model is gone fails to register; the others still do.
    const broken = name("broken");
    const brokenSpec = JSON.parse(JSON.stringify({ ...withUnknownModel(), name: broken })) as Prisma.InputJsonObject;
    await db.prisma.operator.create({
      data: {
        name: broken,
        spec: brokenSpec,
        ownerId: h.users.ENGINEER.id,
        versions: { create: { version: 1, spec: brokenSpec } },
      },
    });
    const result = await h.controlPlane.syncOperatorsToGateway();
    expect(result.registered).toContain(operator);
    expect(result.failures).toEqual([{ name: broken, message: expect.stringContaining("no_such_model") }]);
    expect((await h.as("VIEWER").operators.get({ name: operator })).state).toBe("SERVED");
    await h.as("ENGINEER").operators.delete({ name: operator });
    // Deleting one the gateway does not serve works too.
    await h.as("ENGINEER").operators.delete({ name: broken });
    expect(await db.prisma.operator.count({ where: { name: broken } })).toBe(0);
  });
});
