import { availableParallelism, totalmem } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";

describe.each(testDatabaseBackends({ migrated: true }))("hardware router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db);
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("lets admins write profiles and everyone read them, with JSON-safe numbers", async () => {
    const input = {
      name: "h100-node",
      kind: "GPU" as const,
      cpuCores: 32,
      memoryBytes: 512 * 2 ** 30,
      gpuModel: "H100",
      gpuCount: 8,
      gpuMemoryBytes: 80 * 2 ** 30,
      costPerHour: 12.3456,
      currency: "usd",
    };
    expect(await appCodeOf(h.as("ENGINEER").hardware.create(input))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").hardware.create(input))).toBe("FORBIDDEN");
    const created = await h.as("ADMIN").hardware.create(input);
    expect(created).toMatchObject({ ...input, currency: "USD", isDefault: true });
    expect(typeof created.memoryBytes).toBe("number");
    expect(JSON.parse(JSON.stringify(await h.as("VIEWER").hardware.list()))[0]).toMatchObject({
      name: "h100-node",
      costPerHour: 12.3456,
      memoryBytes: 512 * 2 ** 30,
    });
    expect(await appCodeOf(h.as("ENGINEER").hardware.update({ id: created.id, costPerHour: 1 }))).toBe("FORBIDDEN");
    const updated = await h.as("ADMIN").hardware.update({ id: created.id, costPerHour: 9.5 });
    expect(updated.costPerHour).toBe(9.5);
    expect(updated.gpuCount).toBe(8);
  });

  it("tells everyone the host's cores and memory, which a new profile starts from", async () => {
    const host = await h.as("VIEWER").hardware.host();
    expect(host.cpuCores).toBe(availableParallelism());
    expect(host.memoryBytes).toBe(totalmem());
    expect(host.hostname.length).toBeGreaterThan(0);
  });

  it("keeps exactly one default: the first profile, then the one set", async () => {
    const admin = h.as("ADMIN");
    const cpu = await admin.hardware.create({
      name: "cpu-box",
      kind: "CPU",
      cpuCores: 16,
      costPerHour: 0.8,
      currency: "EUR",
    });
    expect(cpu.isDefault).toBe(false);
    expect(await appCodeOf(h.as("ENGINEER").hardware.setDefault({ id: cpu.id }))).toBe("FORBIDDEN");
    await admin.hardware.setDefault({ id: cpu.id });
    const profiles = await h.as("VIEWER").hardware.list();
    expect(profiles.filter((profile) => profile.isDefault).map((profile) => profile.name)).toEqual(["cpu-box"]);
    expect(profiles[0]!.name).toBe("cpu-box");
    // The default cannot go while others exist; another can.
    expect(await appCodeOf(admin.hardware.delete({ id: cpu.id }))).toBe("CONFLICT");
    const gpu = profiles.find((profile) => profile.name === "h100-node")!;
    await admin.hardware.delete({ id: gpu.id });
    await admin.hardware.delete({ id: cpu.id });
    expect(await h.as("VIEWER").hardware.list()).toEqual([]);
    const { events } = await admin.audit.list({ action: "hardwareProfile.", limit: 20 });
    expect(events.map((event) => event.action).reverse()).toEqual([
      "hardwareProfile.create",
      "hardwareProfile.update",
      "hardwareProfile.create",
      "hardwareProfile.setDefault",
      "hardwareProfile.delete",
      "hardwareProfile.delete",
    ]);
  });

  it("rejects bad profiles with the field named and stores nothing", async () => {
    const admin = h.as("ADMIN");
    await expect(
      admin.hardware.create({ name: "gpu-without-gpus", kind: "GPU", costPerHour: 1, currency: "USD" }),
    ).rejects.toThrow(/gpuCount of at least 1/);
    await expect(
      admin.hardware.create({ name: "cpu-with-gpu", kind: "CPU", gpuCount: 1, costPerHour: 1, currency: "USD" }),
    ).rejects.toThrow(/CPU profile has no GPUs/);
    await expect(admin.hardware.create({ name: "x", kind: "CPU", costPerHour: -1, currency: "USD" })).rejects.toThrow(
      /costPerHour|>=0|too small/i,
    );
    await expect(
      admin.hardware.create({ name: "x", kind: "CPU", costPerHour: 1, currency: "dollars" }),
    ).rejects.toThrow(/three-letter currency code/);
    expect(await db.prisma.hardwareProfile.count()).toBe(0);
    await admin.hardware.create({ name: "same", kind: "CPU", costPerHour: 1, currency: "USD" });
    expect(await appCodeOf(admin.hardware.create({ name: "same", kind: "CPU", costPerHour: 2, currency: "USD" }))).toBe(
      "CONFLICT",
    );
    expect(await appCodeOf(admin.hardware.update({ id: "00000000-0000-4000-8000-000000000000", costPerHour: 2 }))).toBe(
      "NOT_FOUND",
    );
  });
});
