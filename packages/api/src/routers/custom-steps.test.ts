import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

/**
 * Custom steps through the API, against a real gateway: an engineer uploads
 * model.ts and a labels file; it is type-checked, stored, loaded sandboxed,
 * answers, and is audited with its SHA-256. Compile errors come back at
 * file:line:col with nothing stored; an admin can restrict uploads to
 * admins, and viewers never may.
 */
const STEP_TS = `import { readFileSync } from "node:fs";
import type { ExecuteContext, InitializeArgs, TypedRequest } from "@operon/backend-api/typescript-model-api";

export default class Label {
  private labels: string[] = [];
  initialize(args: InitializeArgs): void {
    this.labels = readFileSync(new URL("./labels.txt", import.meta.url), "utf8").trim().split("\\n");
  }
  execute(requests: TypedRequest[], ctx: ExecuteContext) {
    return requests.map((request) => {
      const index = request.input("index").toInt32Array()[0] ?? 0;
      let secret = "unread";
      try {
        secret = readFileSync("/etc/passwd", "utf8").slice(0, 4);
      } catch (error) {
        secret = (error as { code?: string }).code ?? "failed";
      }
      return { outputs: [ctx.tensor.bytes("label", [2], [this.labels[index] ?? "?", secret])] };
    });
  }
}
`;
const BROKEN_TS = `export default class Broken {
  execute(requests: number[]) {
    const count: string = requests.length;
    return undefinedName;
  }
}
`;
const CONFIG_TENSORS = {
  input: [{ name: "index", data_type: "TYPE_INT32", dims: [1] }],
  output: [{ name: "label", data_type: "TYPE_STRING", dims: [2] }],
};
const b64 = (text: string) => Buffer.from(text).toString("base64");
const TENSORS = {
  inputs: [{ name: "index", datatype: "INT32" as const, dims: [1] }],
  outputs: [{ name: "label", datatype: "BYTES" as const, dims: [2] }],
};

describe.each(testDatabaseBackends({ migrated: true }))("custom steps on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let gateway: TestGateway;
  let dir: string;
  let storeDir: string;
  const name = (base: string): string => `${base}_${backend.name}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-custom-steps-"));
    storeDir = join(dir, "store");
    mkdirSync(storeDir);
    gateway = await startTestGateway({ modelRepositories: [storeDir], modelControlMode: "explicit" });
    db = await backend.setup();
    h = await createControlPlaneHarness(db, {
      gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl },
      modelStoreDir: storeDir,
      uploadStagingDir: join(dir, "staging"),
    });
  });
  afterAll(async () => {
    await h?.close();
    await gateway?.stop();
    await db?.close();
    await backend.teardown();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("stores, loads and serves an engineer's step sandboxed, audited with its SHA-256", async () => {
    const created = await h.as("ENGINEER").models.createCustomStep({
      name: name("labeller"),
      ...TENSORS,
      files: [
        { path: "model.ts", data: b64(STEP_TS) },
        { path: "labels.txt", data: b64("cat\ndog\n") },
      ],
    });
    expect(created).toMatchObject({
      version: 1,
      state: "READY",
      sha256: createHash("sha256").update(STEP_TS).digest("hex"),
    });
    const response = await fetch(`${gateway.httpUrl}/v2/models/${name("labeller")}/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "index", datatype: "INT32", shape: [1], data: [1] }] }),
    });
    const body = (await response.json()) as { outputs: Array<{ data: string[] }> };
    // It read its own labels.txt, and the sandbox refused it /etc/passwd.
    expect(body.outputs[0]?.data).toEqual(["dog", "ERR_ACCESS_DENIED"]);
    expect(readFileSync(join(storeDir, name("labeller"), "config.pbtxt"), "utf8")).toMatch(
      /key: "operon_sandbox"[\s\S]*string_value: "true"/,
    );
    // Its sandbox cannot be edited off.
    const unsandbox = h.as("ENGINEER").models.updateConfig({
      name: name("labeller"),
      config: { name: name("labeller"), backend: "typescript", max_batch_size: 0, ...CONFIG_TENSORS },
    });
    await expect(unsandbox).rejects.toThrow(/is a custom step: its config is set when it is uploaded/);
    const { events } = await h.as("ADMIN").audit.list({ action: "model.custom_step.create", limit: 10 });
    expect(events.find((e) => e.targetId === name("labeller"))?.after).toMatchObject({
      sha256: created.sha256,
      sandboxed: true,
      files: [
        { path: "model.ts", sha256: created.sha256 },
        { path: "labels.txt", sha256: createHash("sha256").update("cat\ndog\n").digest("hex") },
      ],
    });
  }, 120_000);

  it("adds versions: the next serves in place of the last; one that does not compile or load leaves it serving", async () => {
    const step = name("versioned");
    const files = (labels: string, code = STEP_TS) => [
      { path: "model.ts", data: b64(code) },
      { path: "labels.txt", data: b64(labels) },
    ];
    const labelOf = async (index: number): Promise<string | undefined> => {
      const response = await fetch(`${gateway.httpUrl}/v2/models/${step}/infer`, {
        method: "POST",
        body: JSON.stringify({ inputs: [{ name: "index", datatype: "INT32", shape: [1], data: [index] }] }),
      });
      return ((await response.json()) as { outputs: Array<{ data: string[] }> }).outputs[0]?.data[0];
    };
    await h.as("ENGINEER").models.createCustomStep({ name: step, ...TENSORS, files: files("cat\ndog\n") });
    expect(await labelOf(1)).toBe("dog");

    const second = await h.as("ENGINEER").models.addCustomStepVersion({ name: step, files: files("lion\nwolf\n") });
    expect(second).toMatchObject({ version: 2, state: "READY" });
    expect(await labelOf(1)).toBe("wolf");
    expect(readFileSync(join(storeDir, step, "config.pbtxt"), "utf8")).toMatch(/key: "operon_sandbox"/);

    // Refused before anything is stored: a compile error.
    const broken = h.as("ENGINEER").models.addCustomStepVersion({ name: step, files: files("x\n", BROKEN_TS) });
    await expect(broken).rejects.toThrow(/model\.ts:3:11 Type 'number' is not assignable to type 'string'\./);
    // Stored, then refused by the gateway (it throws while loading): removed again.
    const failing = STEP_TS.replace(
      "initialize(args: InitializeArgs): void {",
      'initialize(args: InitializeArgs): void {\n    throw new Error("no labels today");',
    );
    const refused = h.as("ENGINEER").models.addCustomStepVersion({ name: step, files: files("x\n", failing) });
    await expect(refused).rejects.toThrow(/no labels today/);
    expect(existsSync(join(storeDir, step, "3"))).toBe(false);
    expect(await labelOf(1)).toBe("wolf");
    const listed = (await h.as("VIEWER").models.list()).models.find((model) => model.name === step)!;
    expect(listed.versions.map((v) => [v.version, v.state])).toEqual([
      [1, "UNAVAILABLE"],
      [2, "READY"],
    ]);

    // Someone else's step (an admin's) is not an engineer's to version, and there is no step by an unknown name.
    await h.as("ADMIN").models.createCustomStep({ name: name("admins"), ...TENSORS, files: files("a\n") });
    expect(
      await appCodeOf(h.as("ENGINEER").models.addCustomStepVersion({ name: name("admins"), files: files("b\n") })),
    ).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").models.addCustomStepVersion({ name: step, files: files("c\n") }))).toBe(
      "FORBIDDEN",
    );
    const { events } = await h.as("ADMIN").audit.list({ action: "model.custom_step.version", limit: 10 });
    expect(events.filter((e) => e.targetId === step).map((e) => e.after)).toEqual([
      expect.objectContaining({
        version: 2,
        sandboxed: true,
        sha256: createHash("sha256").update(STEP_TS).digest("hex"),
      }),
    ]);
  }, 180_000);

  it("takes the tensors model.ts declares (operonSignature): inspected before upload, used when none are given", async () => {
    const declaring = STEP_TS.replace(
      "export default class Label {",
      `export const operonSignature = {
  inputs: [{ name: "index", datatype: "INT32", dims: [1] }],
  outputs: [{ name: "label", datatype: "BYTES", dims: [2] }],
} as const;
export default class Label {`,
    );
    const files = [
      { path: "model.ts", data: b64(declaring) },
      { path: "labels.txt", data: b64("cat\ndog\n") },
    ];
    const inspected = await h.as("ENGINEER").models.inspectCustomStep({ files });
    expect(inspected).toEqual({ problems: [], signature: { maxBatchSize: 0, ...TENSORS } });
    expect(
      await h.as("ENGINEER").models.inspectCustomStep({ files: [{ path: "model.ts", data: b64(BROKEN_TS) }] }),
    ).toMatchObject({ problems: [expect.stringMatching(/^model\.ts:3:11 /), expect.any(String)], signature: null });

    // Given tensors must agree with the declaration; without either, the form says how to give them.
    const disagreeing = h.as("ENGINEER").models.createCustomStep({
      name: name("declared"),
      inputs: [{ name: "index", datatype: "INT64", dims: [1] }],
      files,
    });
    await expect(disagreeing).rejects.toThrow(/inputs: differ from what model\.ts declares \(index INT32 \[1\]\)/);
    const undeclared = h.as("ENGINEER").models.createCustomStep({
      name: name("declared"),
      files: [{ path: "model.ts", data: b64(STEP_TS) }, files[1]!],
    });
    await expect(undeclared).rejects.toThrow(/inputs: give the step's inputs, or declare them in model\.ts/);

    const created = await h.as("ENGINEER").models.createCustomStep({ name: name("declared"), files });
    expect(created.state).toBe("READY");
    const config = readFileSync(join(storeDir, name("declared"), "config.pbtxt"), "utf8");
    expect(config).toMatch(/name: "index"[\s\S]*TYPE_INT32[\s\S]*name: "label"[\s\S]*TYPE_STRING/);
    // A version declaring other tensors is not this step's next version.
    const other = declaring.replace("dims: [2] }]", "dims: [3] }]");
    const refused = h.as("ENGINEER").models.addCustomStepVersion({
      name: name("declared"),
      files: [{ path: "model.ts", data: b64(other) }, files[1]!],
    });
    await expect(refused).rejects.toThrow(/outputs: differ from what model\.ts declares \(label BYTES \[3\]\)/);
  }, 180_000);

  it("reports compile errors at file:line:col and stores nothing", async () => {
    const broken = h.as("ENGINEER").models.createCustomStep({
      name: name("broken"),
      ...TENSORS,
      files: [{ path: "model.ts", data: b64(BROKEN_TS) }],
    });
    await expect(broken).rejects.toThrow(/model\.ts:3:11 Type 'number' is not assignable to type 'string'\./);
    await expect(broken).rejects.toThrow(/model\.ts:4:12 Cannot find name 'undefinedName'/);
    expect(await appCodeOf(broken)).toBe("VALIDATION_FAILED");
    expect(existsSync(join(storeDir, name("broken")))).toBe(false);
    const models = (await h.as("VIEWER").models.list()).models.map((model) => model.name);
    expect(models).not.toContain(name("broken"));
    const noEntry = h.as("ENGINEER").models.createCustomStep({
      name: name("broken"),
      ...TENSORS,
      files: [
        { path: "labels.txt", data: b64("a\n") },
        { path: "helper.js", data: b64("export {}") },
      ],
    });
    await expect(noEntry).rejects.toThrow(/files: a custom step needs its model\.ts/);
    await expect(noEntry).rejects.toThrow(/files\.1\.path: 'helper\.js': a custom step's code is its one model\.ts/);
  }, 120_000);

  it("answers other requests while a large upload is type-checked (the check runs in a worker thread)", async () => {
    // A model.ts big enough that TypeScript takes seconds over it, with one type error at its end.
    const lines = Array.from(
      { length: 6000 },
      (_, i) =>
        `export const table${i}: Record<string, { at: number; tag: string }> = { r${i}: { at: ${i}, tag: "t${i}" } };`,
    );
    const LARGE_TS = `${lines.join("\n")}\nexport default class Large {\n  execute(): number {\n    return "late";\n  }\n}\n`;
    const started = performance.now();
    let checkedAt = 0;
    const refused = h
      .as("ENGINEER")
      .models.createCustomStep({ name: name("large"), ...TENSORS, files: [{ path: "model.ts", data: b64(LARGE_TS) }] })
      .then(
        () => undefined,
        (error: unknown) => error,
      )
      .finally(() => (checkedAt = performance.now()));
    // When each call, asked every 20 ms, was answered: a stalled event loop shows as a long gap between two.
    const answeredAt: number[] = [started];
    while (checkedAt === 0) {
      await h.as("VIEWER").models.codeUploadPolicy();
      answeredAt.push(performance.now());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const gapsMs = answeredAt.slice(1).map((at, i) => at - answeredAt[i]!);
    expect(String(await refused)).toMatch(/model\.ts:6003:5 Type 'string' is not assignable to type 'number'\./);
    // The check took long enough to matter, and the control plane kept answering throughout it. On the event
    // loop, the call asked as the check started would wait for all of it: one gap as long as the check. In a worker
    // thread the longest gap is a scheduling or GC pause, a small part of it; a fixed bound (400 ms) failed on a
    // loaded 2-core host, so the bound is relative to the check's own duration (which grows with the load too).
    const checkMs = checkedAt - started;
    expect(checkMs).toBeGreaterThan(1000);
    expect(gapsMs.length).toBeGreaterThan(10);
    expect(Math.max(...gapsMs), `longest gap in a ${Math.round(checkMs)} ms check`).toBeLessThan(checkMs / 2);
  }, 120_000);

  it("lets engineers upload by default, admins only once an admin says so; never viewers", async () => {
    const upload = (role: "ADMIN" | "ENGINEER" | "VIEWER", base: string) =>
      h.as(role).models.createCustomStep({
        name: name(base),
        ...TENSORS,
        files: [
          { path: "model.ts", data: b64(STEP_TS) },
          { path: "labels.txt", data: b64("x\n") },
        ],
      });
    expect(await appCodeOf(upload("VIEWER", "by_viewer"))).toBe("FORBIDDEN");
    expect(
      await appCodeOf(h.as("VIEWER").models.inspectCustomStep({ files: [{ path: "model.ts", data: b64(STEP_TS) }] })),
    ).toBe("FORBIDDEN");
    expect(await h.as("ENGINEER").models.codeUploadPolicy()).toEqual({ adminsOnly: false });
    expect((await upload("ENGINEER", "before_restriction")).state).toBe("READY");
    expect(await appCodeOf(h.as("ENGINEER").models.setCodeUploadPolicy({ adminsOnly: true }))).toBe("FORBIDDEN");
    await h.as("ADMIN").models.setCodeUploadPolicy({ adminsOnly: true });
    try {
      const refused = upload("ENGINEER", "by_engineer");
      await expect(refused).rejects.toThrow(/an admin has restricted uploading code \(custom steps\) to admins/);
      expect(await appCodeOf(refused)).toBe("FORBIDDEN");
      expect(existsSync(join(storeDir, name("by_engineer")))).toBe(false);
      // The check before an upload and a new version are code uploads too.
      const code = [{ path: "model.ts", data: b64(STEP_TS) }];
      expect(await appCodeOf(h.as("ENGINEER").models.inspectCustomStep({ files: code }))).toBe("FORBIDDEN");
      expect((await upload("ADMIN", "by_admin")).state).toBe("READY");
      // Even of the engineer's own step, uploaded while engineers still could.
      const own = h.as("ENGINEER").models.addCustomStepVersion({ name: name("before_restriction"), files: code });
      await expect(own).rejects.toThrow(/an admin has restricted uploading code/);
    } finally {
      await h.as("ADMIN").models.setCodeUploadPolicy({ adminsOnly: false });
    }
    expect((await upload("ENGINEER", "by_engineer")).state).toBe("READY");
    const { events } = await h.as("ADMIN").audit.list({ action: "settings.code_upload", limit: 10 });
    expect(events.map((event) => event.after)).toEqual(
      expect.arrayContaining([{ adminsOnly: true }, { adminsOnly: false }]),
    );
  }, 120_000);
});
