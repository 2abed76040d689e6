import { describe, expect, it } from "vitest";
import type { TenantGrant } from "@operon/protocol/api-keys";
import { OperonError } from "@operon/protocol/errors";
import { TenantShares, anonymousSpecAmong, slotsOf, type GatedModel, type MeasuredResult } from "./tenant-shares.js";

/**
 * A simulated model behind the gate: one instance that executes one request
 * at a time, 1 ms of compute per inference on a controllable clock, and
 * closed-loop clients that send their next request as soon as one ends.
 */
class Simulation {
  clockMs = 0;
  readonly shares: TenantShares;
  private readonly backlog: Array<{ batch: number; resolve: (result: MeasuredResult) => void }> = [];
  readonly model: GatedModel = {
    model: "m",
    config: { max_batch_size: 0, instance_group: [{ count: 1 }] },
    instances: {
      execute: (request) =>
        new Promise<MeasuredResult>((resolve) => this.backlog.push({ batch: request.batchSize, resolve })),
    },
  };
  readonly units = new Map<string, number>();
  readonly requests = new Map<string, number>();
  readonly refusals: OperonError[] = [];
  private stopped = false;
  private tick: Promise<void> = Promise.resolve();
  private releaseTick: () => void = () => undefined;
  /** Requests inside the model (its scheduler's backlog) at each step. */
  readonly backlogSizes: number[] = [];

  constructor(tenants: TenantGrant[]) {
    this.shares = new TenantShares({ now: () => this.clockMs });
    this.shares.configure(tenants);
    this.nextTick();
  }

  client(tenant: string | undefined, batch = 1): void {
    void (async () => {
      while (!this.stopped) {
        try {
          await this.shares.execute(this.model, tenant, { batchSize: batch });
          const key = tenant ?? "anonymous";
          this.units.set(key, (this.units.get(key) ?? 0) + batch);
          this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
        } catch (error) {
          if (!(error instanceof OperonError)) throw error;
          this.refusals.push(error);
          await this.tick; // a refused client comes back at the next completion, not in a tight loop
        }
      }
    })();
  }

  /** Runs `steps` executions, one at a time, each taking its batch in ms. */
  async run(steps: number): Promise<void> {
    for (let step = 0; step < steps; step += 1) {
      await settle();
      this.backlogSizes.push(this.backlog.length);
      const job = this.backlog.shift();
      if (job === undefined) continue;
      this.clockMs += job.batch;
      job.resolve({ timing: { computeInferNs: job.batch * 1e6 }, executedBatchSize: job.batch });
      this.nextTick();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // Let every waiting request finish so no promise is left pending.
    for (let i = 0; i < 1000 && this.backlog.length > 0; i += 1) await this.run(1);
    this.releaseTick();
  }

  private nextTick(): void {
    const release = this.releaseTick;
    this.tick = new Promise((resolve) => (this.releaseTick = resolve));
    release();
  }
}

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const tenant = (id: string, share: number, policy: TenantGrant["policy"] = "queue"): TenantGrant => ({
  id,
  share,
  policy,
});

describe("TenantShares", () => {
  it("is disabled until tenants are configured, and then again when none are", () => {
    const shares = new TenantShares();
    expect(shares.enabled).toBe(false);
    shares.configure([tenant("a", 1)]);
    expect(shares.enabled).toBe(true);
    shares.configure([]);
    expect(shares.enabled).toBe(false);
  });

  it("counts a tenant the grants stop naming as anonymous, and lists only the configured ones", async () => {
    const shares = new TenantShares();
    shares.configure([tenant("a", 2), tenant("b", 1)]);
    expect(
      shares
        .shares()
        .map((spec) => spec.id)
        .sort(),
    ).toEqual(["a", "anonymous", "b"]);
    shares.configure([tenant("b", 3, "refuse")]);
    // Requests without a key count as the least-favoured tenant (anonymousSpecAmong): b's policy, a share of at most 1.
    expect(shares.shares().sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      tenant("anonymous", 1, "refuse"),
      tenant("b", 3, "refuse"),
    ]);
    const done = { timing: { computeInferNs: 2e6 }, executedBatchSize: 1 };
    const model: GatedModel = { model: "m", config: {}, instances: { execute: async () => done } };
    await shares.execute(model, "a", { batchSize: 1 });
    await shares.execute(model, "b", { batchSize: 1 });
    expect(
      shares
        .drainUsage()
        .map((usage) => [usage.tenant, usage.requests])
        .sort(),
    ).toEqual([
      ["anonymous", 1],
      ["b", 1],
    ]);
  });

  it("gives requests without a key the share and policy of the least-favoured tenant, never more than share 1", () => {
    expect(anonymousSpecAmong([tenant("gold", 4), tenant("tiny", 0.25, "refuse"), tenant("user:x", 1)])).toEqual(
      tenant("anonymous", 0.25, "refuse"),
    );
    expect(anonymousSpecAmong([tenant("gold", 4)])).toEqual(tenant("anonymous", 1));
    expect(anonymousSpecAmong([tenant("a", 0.5), tenant("b", 0.5, "refuse")])).toEqual(
      tenant("anonymous", 0.5, "refuse"),
    );
    expect(anonymousSpecAmong([])).toEqual(tenant("anonymous", 1));
  });

  it("sizes a model's slots from its instances and max batch size", () => {
    const instances = { execute: async () => ({ timing: { computeInferNs: 0 }, executedBatchSize: 1 }) };
    expect(slotsOf({ model: "m", config: {}, instances })).toBe(2);
    expect(slotsOf({ model: "m", config: { max_batch_size: 8, instance_group: [{ count: 2 }, {}] }, instances })).toBe(
      48,
    );
  });

  it("gives two saturating tenants with shares 2:1 units within 10 % of 2:1", async () => {
    const sim = new Simulation([tenant("gold", 2), tenant("bronze", 1)]);
    for (let i = 0; i < 6; i += 1) {
      sim.client("gold");
      sim.client("bronze");
    }
    await sim.run(3000);
    const ratio = sim.units.get("gold")! / sim.units.get("bronze")!;
    expect(ratio).toBeGreaterThan(1.8);
    expect(ratio).toBeLessThan(2.2);
    await sim.stop();
  });

  it("is work-conserving: a tenant alone uses the whole model, whatever its share", async () => {
    const sim = new Simulation([tenant("gold", 2), tenant("bronze", 1)]);
    for (let i = 0; i < 6; i += 1) sim.client("bronze");
    await sim.run(500);
    expect(sim.units.get("bronze")).toBeGreaterThanOrEqual(499);
    // The model never runs dry: its slots (2) stay full while the tenant has requests.
    expect(Math.min(...sim.backlogSizes.slice(1))).toBe(2);
    // Then the idle tenant arrives: it starts at the current virtual time, with no credit for having been idle.
    for (let i = 0; i < 6; i += 1) sim.client("gold");
    const before = new Map(sim.units);
    await sim.run(1500);
    const gold = sim.units.get("gold")!;
    const bronze = sim.units.get("bronze")! - before.get("bronze")!;
    expect(gold / bronze).toBeGreaterThan(1.8);
    expect(gold / bronze).toBeLessThan(2.2);
    await sim.stop();
  });

  it("weighs requests by their cost: a request of 3 inferences counts 3 times", async () => {
    const sim = new Simulation([tenant("big", 1), tenant("small", 1)]);
    for (let i = 0; i < 6; i += 1) {
      sim.client("big", 3);
      sim.client("small", 1);
    }
    await sim.run(3000);
    const units = sim.units.get("big")! / sim.units.get("small")!;
    expect(units).toBeGreaterThan(0.9);
    expect(units).toBeLessThan(1.1);
    // Equal shares of units means about 3 small requests per big one.
    const requests = sim.requests.get("small")! / sim.requests.get("big")!;
    expect(requests).toBeGreaterThan(2.7);
    expect(requests).toBeLessThan(3.3);
    const usage = sim.shares.drainUsage();
    expect(usage.find((entry) => entry.tenant === "big")!.units).toBeCloseTo(sim.units.get("big")!, 0);
    expect(sim.shares.drainUsage()).toEqual([]);
    await sim.stop();
  });

  it("counts requests without a tenant (or with an unknown one) as the anonymous tenant", async () => {
    const sim = new Simulation([tenant("gold", 2)]);
    for (let i = 0; i < 4; i += 1) {
      sim.client(undefined);
      sim.client("gold");
    }
    await sim.run(1500);
    const ratio = sim.units.get("gold")! / sim.units.get("anonymous")!;
    expect(ratio).toBeGreaterThan(1.8);
    expect(ratio).toBeLessThan(2.2);
    await sim.stop();
  });

  it("refuses a refuse-policy tenant over its share under contention with RESOURCE_EXHAUSTED and a retry hint", async () => {
    const sim = new Simulation([tenant("paying", 2), tenant("free", 1, "refuse")]);
    // Uncontended: no refusals, however much the refuse-policy tenant sends.
    sim.client("free");
    await sim.run(300);
    expect(sim.refusals).toEqual([]);
    for (let i = 0; i < 6; i += 1) {
      sim.client("paying");
      sim.client("free");
    }
    await sim.run(2000);
    expect(sim.refusals.length).toBeGreaterThan(0);
    for (const refusal of sim.refusals) {
      expect(refusal.kind).toBe("RESOURCE_EXHAUSTED");
      expect(refusal.message).toMatch(/tenant 'free' is over its share/);
      expect(refusal.retryAfterSecs).toBeGreaterThanOrEqual(1);
      expect(refusal.retryAfterSecs).toBeLessThanOrEqual(60);
    }
    // Counted when refused (the clients note theirs a microtask later).
    expect(sim.shares.drainUsage().find((entry) => entry.tenant === "free")!.refused).toBeGreaterThanOrEqual(
      sim.refusals.length,
    );
    // Refusing keeps the refused tenant within its share: the other one gets at least its 2:1.
    const before = new Map(sim.units);
    await sim.run(1000);
    expect(
      (sim.units.get("paying")! - (before.get("paying") ?? 0)) / (sim.units.get("free")! - before.get("free")!),
    ).toBeGreaterThan(1.8);
    await sim.stop();
  });

  it("answers UNAVAILABLE when too many requests wait on one model", async () => {
    const shares = new TenantShares({ maxWaitingPerModel: 1 });
    shares.configure([tenant("a", 1)]);
    const held: Array<(result: MeasuredResult) => void> = [];
    const model: GatedModel = {
      model: "m",
      config: {},
      instances: { execute: () => new Promise<MeasuredResult>((resolve) => held.push(resolve)) },
    };
    const one = { batchSize: 1 };
    const running = [shares.execute(model, "a", one), shares.execute(model, "a", one), shares.execute(model, "a", one)];
    await expect(shares.execute(model, "a", one)).rejects.toMatchObject({ kind: "UNAVAILABLE" });
    for (let i = 0; i < 3; i += 1) {
      held.shift()!({ timing: { computeInferNs: 1e6 }, executedBatchSize: 1 });
      await settle();
    }
    await Promise.all(running);
  });

  it("drops a request cancelled while it waited, when its turn comes", async () => {
    const shares = new TenantShares();
    shares.configure([tenant("a", 1)]);
    const held: Array<(result: MeasuredResult) => void> = [];
    const model: GatedModel = {
      model: "m",
      config: {},
      instances: { execute: () => new Promise<MeasuredResult>((resolve) => held.push(resolve)) },
    };
    const first = [shares.execute(model, "a", { batchSize: 1 }), shares.execute(model, "a", { batchSize: 1 })];
    const controller = new AbortController();
    const cancelled = shares.execute(model, "a", { batchSize: 1, signal: controller.signal });
    controller.abort();
    held.shift()!({ timing: { computeInferNs: 1e6 }, executedBatchSize: 1 });
    await expect(cancelled).rejects.toMatchObject({ kind: "CANCELLED" });
    held.shift()!({ timing: { computeInferNs: 1e6 }, executedBatchSize: 1 });
    await Promise.all(first);
    expect(held).toEqual([]);
  });
});
