import type { Database } from "@operon/db";
import { describe, expect, it } from "vitest";
import { CONTROL_PLANE_DEFAULTS, resolveControlPlaneOptions, SILENT_LOGGER } from "./options.js";

const db = { prisma: {}, kind: "embedded" } as unknown as Database;
const base = {
  db,
  gateway: { httpUrl: "http://127.0.0.1:8000" },
  modelStoreDir: "/tmp/store",
  uploadStagingDir: "/tmp/staging",
};

describe("control plane options", () => {
  it("fills in the package's defaults and passes the database and logger through as they are", () => {
    const resolved = resolveControlPlaneOptions(base);
    expect(resolved).toMatchObject({ ...CONTROL_PLANE_DEFAULTS, modelStoreDir: "/tmp/store" });
    expect(resolved.db).toBe(db);
    expect(resolved.logger).toBe(SILENT_LOGGER);
    const logger = { info: () => {}, warn: () => {}, error: () => {} };
    expect(
      resolveControlPlaneOptions({ ...base, logger, usageSampleIntervalSecs: undefined, usageRetentionDays: 0 }),
    ).toMatchObject({
      logger,
      usageSampleIntervalSecs: CONTROL_PLANE_DEFAULTS.usageSampleIntervalSecs,
      usageRetentionDays: 0,
    });
  });

  it("refuses values out of range", () => {
    expect(() => resolveControlPlaneOptions({ ...base, maxUploadBytes: 0 })).toThrow();
    expect(() => resolveControlPlaneOptions({ ...base, usageRetentionDays: -1 })).toThrow();
    expect(() =>
      resolveControlPlaneOptions({ ...base, resourceScheduler: { minGateways: 4, maxGateways: 3 } }),
    ).toThrow(/--scheduler-max-gateways must be at least --scheduler-min-gateways/);
  });
});
