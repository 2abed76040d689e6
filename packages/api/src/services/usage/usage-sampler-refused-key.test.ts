import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { ApiKeyRing } from "@operon/gateway/auth/api-key-ring";
import { controlPlaneGrant, generateApiKey } from "@operon/protocol/api-keys";
import type { Logger } from "@operon/protocol/logger";
import { GatewayClient } from "../gateway/gateway-client.js";
import { startTestGateway, type TestGateway } from "../../testing/gateway-harness.js";
import { UsageSampler } from "./usage-sampler.js";

/**
 * A real gateway that stops accepting the control plane's key (revoked by hand), sampled again and again: the
 * refusal is logged when it starts, as a reminder after the reminder interval, and once when the key is accepted
 * again; not on every sample.
 */
const EXAMPLES = fileURLToPath(new URL("../../../../../examples/model_repository", import.meta.url));
const controlPlaneKey = generateApiKey();
const userAdmin = generateApiKey();
const USER_ADMIN_GRANT = {
  id: "user-admin",
  hash: userAdmin.hash,
  scopes: ["admin" as const],
  priorityLevel: 0,
  qpsQuota: null,
  expiresAt: null,
};
const ring = new ApiKeyRing([controlPlaneGrant(controlPlaneKey.hash), USER_ADMIN_GRANT]);
const REFUSED = /refused the control plane's internal key/;

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway({
    modelRepositories: [EXAMPLES],
    loadModels: ["add_sub"],
    backendIsolation: "process",
    access: { ring, requireApiKey: true },
  });
});
afterAll(async () => {
  await gateway?.stop();
});

function capturingLogger(): Logger & { warnings: string[]; infos: string[] } {
  const warnings: string[] = [];
  const infos: string[] = [];
  return {
    warnings,
    infos,
    info: (_obj, msg) => void infos.push(msg ?? ""),
    warn: (_obj, msg) => void warnings.push(msg ?? ""),
    error: (_obj, msg) => void warnings.push(msg ?? ""),
  };
}

// Copies of the run's migrated template database: migrating them, as the set-up below does, finds nothing to apply.
const backends = testDatabaseBackends({ migrated: true });
describe.each(backends)("usage sampler with a revoked control plane key on $name", (backend) => {
  let db: Database;

  beforeAll(async () => {
    db = await backend.setup();
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
    await backend.teardown();
  });

  it("logs the refusal when it starts, as a seldom reminder while it lasts, and once when it ends", async () => {
    // Valid to begin with (each database backend runs this test on the one gateway).
    ring.replaceAll([controlPlaneGrant(controlPlaneKey.hash), USER_ADMIN_GRANT]);
    const logger = capturingLogger();
    let now = Date.parse("2026-12-06T03:00:00Z");
    const sampler = new UsageSampler(
      db.prisma,
      new GatewayClient({ httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl, adminKey: controlPlaneKey.key }),
      { intervalSecs: 0, retentionDays: 0 },
      logger,
      () => Promise.resolve([]),
      { reminderMs: 600_000, now: () => now },
    );
    expect(await sampler.sampleNow()).toMatchObject({ baseline: true, skipped: null });
    expect(logger.warnings).toEqual([]);

    // Revoked: the gateway's ring no longer holds the control plane's key.
    ring.replaceAll([USER_ADMIN_GRANT]);
    const first = await sampler.sampleNow();
    expect(first.skipped).toMatch(/refused the control plane's key/);
    const refusedLines = logger.warnings.filter((line) => REFUSED.test(line));
    expect(refusedLines).toHaveLength(1);
    expect(refusedLines[0]).toMatch(/^usage sample skipped for the control plane's gateway/);
    for (let sample = 0; sample < 5; sample += 1) {
      now += 1_000;
      expect((await sampler.sampleNow()).skipped).toMatch(/refused/);
    }
    // Six refused samples, one line (before: one line a sample).
    expect(logger.warnings).toHaveLength(1);

    now += 600_000;
    await sampler.sampleNow();
    expect(logger.warnings).toHaveLength(2);
    expect(logger.warnings[1]).toMatch(/still refused: 6 reads since the last line about it/);

    // The key is valid again (a restarted control plane's new key is stored): said once, and sampling goes on.
    ring.replaceAll([controlPlaneGrant(controlPlaneKey.hash), USER_ADMIN_GRANT]);
    expect(await sampler.sampleNow()).toMatchObject({ skipped: null });
    await sampler.sampleNow();
    expect(logger.infos.filter((line) => /accepts the control plane's key again/.test(line))).toEqual([
      "the gateway accepts the control plane's key again (statistics of the control plane's gateway)",
    ]);
    expect(logger.warnings).toHaveLength(2);

    // Revoked once more: said again at once.
    ring.replaceAll([USER_ADMIN_GRANT]);
    await sampler.sampleNow();
    await sampler.sampleNow();
    expect(logger.warnings).toHaveLength(3);
    expect(logger.warnings[2]).toMatch(REFUSED);
    await sampler.stop();
  });
});
