import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { ExecutionTiming } from "../observability/model-stats.js";
import {
  RequestScheduler,
  type InstanceDispatcher,
  type RequestContext,
  type ReservedInstance,
  type ScheduledRequest,
  type StreamedResponse,
} from "./request-scheduler.js";
import type { SchedulerPolicy } from "./scheduler-policy.js";
import { FakeClock } from "./testing/fake-clock.js";

/** A dispatcher whose executions the test completes by hand. */
class ManualInstances implements InstanceDispatcher {
  readonly executions: Array<{
    inputs: Tensor[];
    context: RequestContext | undefined;
    complete(): void;
    fail(error: unknown): void;
  }> = [];
  /** Streamed requests: the test sends their responses by hand; end() sends the final one and frees the instance. */
  readonly streams: Array<{
    inputs: Tensor[];
    context: RequestContext | undefined;
    send(response: StreamedResponse): void;
    end(): void;
  }> = [];
  readonly requestBatches: Tensor[][][] = [];
  private listener: () => void = () => undefined;
  free: number;
  isDead = false;

  constructor(capacity: number) {
    this.free = capacity;
  }

  acquire(): ReservedInstance | undefined {
    if (this.free === 0) return undefined;
    this.free -= 1;
    const release = () => {
      this.free += 1;
      queueMicrotask(() => this.listener());
    };
    return {
      runStream: (inputs, _outputNames, onResponse, context) =>
        new Promise((resolve) => {
          this.streams.push({
            inputs,
            context,
            send: onResponse,
            end: () => {
              release();
              onResponse({ outputs: [], final: true });
              resolve({ timing: TIMING });
            },
          });
        }),
      run: (inputs, _outputNames, context) =>
        new Promise((resolve, reject) => {
          this.executions.push({
            inputs,
            context,
            complete: () => {
              release();
              resolve({ outputs: inputs.map((input) => ({ ...input, name: `out_${input.name}` })), timing: TIMING });
            },
            fail: (error) => {
              release();
              reject(error);
            },
          });
        }),
      // Request-level backends: each request settles alone; a value of -1 fails its request.
      runRequests: (requests) => {
        this.requestBatches.push(requests.map((request) => request.inputs));
        release();
        return Promise.resolve(
          requests.map(
            (request): PromiseSettledResult<{ outputs: Tensor[]; timing: ExecutionTiming }> =>
              request.inputs[0]!.data.readFloatLE(0) === -1
                ? { status: "rejected", reason: new OperonError("INVALID_ARG", "bad request -1") }
                : {
                    status: "fulfilled",
                    value: {
                      outputs: request.inputs.map((input) => ({ ...input, name: `out_${input.name}` })),
                      timing: TIMING,
                    },
                  },
          ),
        );
      },
    };
  }

  onCapacity(listener: () => void): void {
    this.listener = listener;
  }

  hasCapacity(): boolean {
    return this.free > 0;
  }

  addCapacity(): void {
    this.free += 1;
    this.listener();
  }
}

const TIMING: ExecutionTiming = { computeInputNs: 1, computeInferNs: 2, computeOutputNs: 3 };

function policy(overrides: Partial<SchedulerPolicy> = {}): SchedulerPolicy {
  return {
    maxBatchSize: 8,
    batching: true,
    joinInputs: true,
    preferredBatchSizes: [],
    maxQueueDelayNs: 0,
    preserveOrdering: false,
    priorityLevels: 0,
    defaultPriorityLevel: 0,
    queuePolicies: [{ timeoutAction: "REJECT", defaultTimeoutNs: 0, allowTimeoutOverride: false, maxQueueSize: 0 }],
    ...overrides,
  };
}

function request(
  value: number,
  options: Partial<ScheduledRequest> & { batch?: number; width?: number } = {},
): ScheduledRequest {
  const batch = options.batch ?? 1;
  const width = options.width ?? 2;
  const data = Buffer.from(new Float32Array(batch * width).fill(value).buffer);
  return {
    inputs: [{ name: "x", datatype: "FP32", shape: [batch, width], data }],
    outputNames: undefined,
    batchSize: batch,
    level: 0,
    timeoutNs: 0,
    ...options,
  };
}

function valueOf(tensor: Tensor): number {
  return tensor.data.readFloatLE(0);
}

// A timer, then an immediate: the scheduler's end-of-turn pass (a setImmediate) queued before it has run. A bare
// setTimeout(0) fired before that pass when the host was slow enough for 1 ms to pass first (a loaded run failed so).
const tick = () => new Promise((resolve) => setTimeout(() => setImmediate(resolve), 0));

describe("RequestScheduler", () => {
  it("batches requests that queued while every instance was busy, up to max_batch_size", async () => {
    const instances = new ManualInstances(1);
    const scheduler = new RequestScheduler(policy({ maxBatchSize: 4 }), instances, { describe: "m" });
    const results = [1, 2, 3, 4, 5, 6].map((v) => scheduler.enqueue(request(v)));
    await tick();
    // All six arrived in one event-loop turn: the idle instance takes the first four as one batch (capped at 4).
    expect(instances.executions).toHaveLength(1);
    expect(instances.executions[0]!.inputs[0]!.shape).toEqual([4, 2]);
    const seventh = scheduler.enqueue(request(7)); // arrives while the only instance is busy
    instances.executions[0]!.complete();
    await tick();
    expect(instances.executions[1]!.inputs[0]!.shape).toEqual([3, 2]); // 5, 6 and 7 together
    instances.executions[1]!.complete();
    const settled = await Promise.all([...results, seventh]);
    expect(settled.map((r) => valueOf(r.outputs[0]!))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(settled.map((r) => r.executedBatchSize)).toEqual([4, 4, 4, 4, 3, 3, 3]);
    expect(settled[2]!.outputs[0]!.shape).toEqual([1, 2]);
  });

  it("never batches requests with different non-batch shapes", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy(), instances, { describe: "m" });
    const results = [
      scheduler.enqueue(request(1, { width: 2 })),
      scheduler.enqueue(request(2, { width: 3 })),
      scheduler.enqueue(request(3, { width: 2 })),
    ];
    instances.addCapacity();
    await tick();
    expect(instances.executions[0]!.inputs[0]!.shape).toEqual([1, 2]); // stops at the first mismatch, keeping order
    instances.executions[0]!.complete();
    await tick();
    expect(instances.executions[1]!.inputs[0]!.shape).toEqual([1, 3]);
    instances.executions[1]!.complete();
    await tick();
    instances.executions[2]!.complete();
    await Promise.all(results);
  });

  it("waits up to max_queue_delay for a preferred batch size, then sends what it has", async () => {
    const instances = new ManualInstances(1);
    const scheduler = new RequestScheduler(
      policy({ preferredBatchSizes: [4], maxQueueDelayNs: 50_000_000 }),
      instances,
      { describe: "m" },
    );
    const first = [1, 2].map((v) => scheduler.enqueue(request(v)));
    await tick();
    expect(instances.executions).toHaveLength(0); // 2 < preferred 4, within the delay
    const more = [3, 4].map((v) => scheduler.enqueue(request(v)));
    await tick();
    expect(instances.executions).toHaveLength(1);
    expect(instances.executions[0]!.inputs[0]!.shape).toEqual([4, 2]); // preferred size reached: sent at once
    instances.executions[0]!.complete();
    await Promise.all([...first, ...more]);
    const late = scheduler.enqueue(request(5));
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(instances.executions).toHaveLength(2); // the delay expired: sent alone
    instances.executions[1]!.complete();
    expect((await late).executedBatchSize).toBe(1);
  });

  it("serves higher priority levels first", async () => {
    const instances = new ManualInstances(0);
    const levels = policy({
      batching: false,
      priorityLevels: 2,
      defaultPriorityLevel: 2,
      queuePolicies: Array(3).fill({
        timeoutAction: "REJECT",
        defaultTimeoutNs: 0,
        allowTimeoutOverride: false,
        maxQueueSize: 0,
      }),
    });
    const scheduler = new RequestScheduler(levels, instances, { describe: "m" });
    const order: number[] = [];
    const results = [
      scheduler.enqueue(request(1, { level: 2 })).then((r) => order.push(valueOf(r.outputs[0]!))),
      scheduler.enqueue(request(2, { level: 1 })).then((r) => order.push(valueOf(r.outputs[0]!))),
      scheduler.enqueue(request(3, { level: 2 })).then((r) => order.push(valueOf(r.outputs[0]!))),
      scheduler.enqueue(request(4, { level: 1 })).then((r) => order.push(valueOf(r.outputs[0]!))),
    ];
    instances.addCapacity();
    for (let i = 0; i < 4; i += 1) {
      await tick();
      instances.executions[i]!.complete();
    }
    await Promise.all(results);
    expect(order).toEqual([2, 4, 1, 3]);
  });

  it("costs nothing per configured level: 4,000,000 levels serve 80 requests at once (issue 28.7)", async () => {
    const instances = new ManualInstances(0);
    const queuePolicy = {
      timeoutAction: "REJECT" as const,
      defaultTimeoutNs: 60_000_000_000,
      allowTimeoutOverride: false,
      maxQueueSize: 0,
    };
    // Only the levels used have a policy of their own; the rest read index 0 (the default policy).
    const many = policy({
      batching: false,
      priorityLevels: 4_000_000,
      defaultPriorityLevel: 2_000_000,
      queuePolicies: [queuePolicy],
    });
    const started = performance.now();
    const scheduler = new RequestScheduler(many, instances, { describe: "m" });
    const order: number[] = [];
    const results = Array.from({ length: 80 }, (_, i) =>
      scheduler
        .enqueue(request(i, { level: i % 2 === 0 ? 3_999_999 : 7 + i, timeoutNs: 60_000_000_000 }))
        .then((r) => order.push(valueOf(r.outputs[0]!))),
    );
    for (let i = 0; i < 80; i += 1) {
      instances.addCapacity();
      await tick();
      instances.executions[i]!.complete();
    }
    await Promise.all(results);
    expect(performance.now() - started).toBeLessThan(1000);
    // Service order still follows the levels: every odd one (levels 8..86) before the even ones (level 3,999,999).
    expect(order.slice(0, 40).every((value) => value % 2 === 1)).toBe(true);
    expect(order.slice(40)).toEqual(Array.from({ length: 40 }, (_, i) => 2 * i));
  });

  it("rejects at once when the level's queue is full (max_queue_size)", async () => {
    const instances = new ManualInstances(0);
    const full = policy({
      queuePolicies: [{ timeoutAction: "REJECT", defaultTimeoutNs: 0, allowTimeoutOverride: false, maxQueueSize: 2 }],
    });
    const scheduler = new RequestScheduler(full, instances, { describe: "model 'm'" });
    const kept = [scheduler.enqueue(request(1)), scheduler.enqueue(request(2))];
    expect(() => scheduler.enqueue(request(3))).toThrowError(/Exceeds maximum queue size/);
    try {
      scheduler.enqueue(request(3));
    } catch (error) {
      expect((error as OperonError).kind).toBe("UNAVAILABLE");
    }
    instances.addCapacity();
    await tick();
    instances.executions[0]!.complete();
    await Promise.all(kept);
  });

  it("times out queued requests: REJECT fails them, DELAY runs them after the rest", async () => {
    const instances = new ManualInstances(0);
    const reject = new RequestScheduler(policy({ batching: false }), instances, { describe: "m" });
    const timedOut = reject.enqueue(request(1, { timeoutNs: 5_000_000 }));
    await expect(timedOut).rejects.toThrow(/Request timeout expired/);

    const delayInstances = new ManualInstances(0);
    const delay = new RequestScheduler(
      policy({
        batching: false,
        queuePolicies: [{ timeoutAction: "DELAY", defaultTimeoutNs: 0, allowTimeoutOverride: true, maxQueueSize: 0 }],
      }),
      delayInstances,
      { describe: "m" },
    );
    const order: number[] = [];
    const slow = delay.enqueue(request(1, { timeoutNs: 5_000_000 })).then((r) => order.push(valueOf(r.outputs[0]!)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const fresh = delay.enqueue(request(2)).then((r) => order.push(valueOf(r.outputs[0]!)));
    delayInstances.addCapacity();
    for (let i = 0; i < 2; i += 1) {
      await tick();
      delayInstances.executions[i]!.complete();
    }
    await Promise.all([slow, fresh]);
    expect(order).toEqual([2, 1]);
  });

  it("drops a cancelled request from the queue; it never runs", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy({ batching: false }), instances, { describe: "m" });
    const controller = new AbortController();
    const cancelled = scheduler.enqueue(request(1, { signal: controller.signal }));
    const kept = scheduler.enqueue(request(2));
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ kind: "CANCELLED" });
    instances.addCapacity();
    await tick();
    expect(instances.executions).toHaveLength(1);
    expect(valueOf(instances.executions[0]!.inputs[0]!)).toBe(2);
    instances.executions[0]!.complete();
    await kept;
  });

  it("preserve_ordering returns responses in arrival order even when executions finish out of order", async () => {
    const instances = new ManualInstances(2);
    const scheduler = new RequestScheduler(policy({ batching: false, preserveOrdering: true }), instances, {
      describe: "m",
    });
    const order: number[] = [];
    const results = [1, 2].map((v) => scheduler.enqueue(request(v)).then((r) => order.push(valueOf(r.outputs[0]!))));
    await tick();
    instances.executions[1]!.complete(); // request 2 finishes first
    await tick();
    expect(order).toEqual([]);
    instances.executions[0]!.complete();
    await Promise.all(results);
    expect(order).toEqual([1, 2]);
  });

  it("fails a whole batch with the instance's error, and keeps serving", async () => {
    const instances = new ManualInstances(1);
    const scheduler = new RequestScheduler(policy(), instances, { describe: "m" });
    const failing = scheduler.enqueue(request(1));
    await tick();
    instances.executions[0]!.fail(new OperonError("UNAVAILABLE", "worker exited"));
    await expect(failing).rejects.toThrow(/worker exited/);
    const next = scheduler.enqueue(request(2));
    await tick();
    instances.executions[1]!.complete();
    expect(valueOf((await next).outputs[0]!)).toBe(2);
  });

  it("runs a streamed request alone through runStream, relays its responses in order, and settles after the final one", async () => {
    const instances = new ManualInstances(1);
    const executions: number[] = [];
    const scheduler = new RequestScheduler(policy({ maxBatchSize: 4 }), instances, {
      describe: "m",
      onExecution: (batchSize) => executions.push(batchSize),
    });
    const seen: Array<[number, string | number, boolean]> = [];
    const onResponse = (id: number) => (response: StreamedResponse) =>
      seen.push([id, "error" in response ? response.error.kind : response.outputs.length, response.final]);
    const first = scheduler.enqueue({ ...request(1), onResponse: onResponse(1), context: { blsDepth: 2, id: "a" } });
    const second = scheduler.enqueue({ ...request(2), onResponse: onResponse(2) });
    const plain = scheduler.enqueue(request(3));
    await tick();
    expect(instances.streams).toHaveLength(1); // one instance: the others wait
    expect(instances.streams[0]!.context).toEqual({ blsDepth: 2, id: "a" });
    instances.streams[0]!.send({ outputs: instances.streams[0]!.inputs, final: false });
    instances.streams[0]!.send({ error: new OperonError("INVALID_ARG", "one bad token"), final: false });
    instances.streams[0]!.end();
    expect(seen).toEqual([
      [1, 1, false],
      [1, "INVALID_ARG", false],
      [1, 0, true],
    ]);
    const result = await first;
    expect(result.outputs).toEqual([]);
    expect(result.executedBatchSize).toBe(1);
    await tick();
    // The next streamed request is not batched with the plain one behind it, however the policy batches.
    expect(instances.streams).toHaveLength(2);
    expect(instances.executions).toHaveLength(0);
    instances.streams[1]!.end();
    await second;
    await tick();
    expect(instances.executions[0]!.inputs[0]!.shape).toEqual([1, 2]);
    instances.executions[0]!.complete();
    await plain;
    expect(executions).toEqual([1, 1, 1]);
  });

  it("cancels a streamed request while it is queued, without calling its onResponse", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy({ batching: false }), instances, { describe: "m" });
    const controller = new AbortController();
    const seen: StreamedResponse[] = [];
    const queued = scheduler.enqueue({
      ...request(1),
      signal: controller.signal,
      onResponse: (response) => void seen.push(response),
    });
    controller.abort();
    await expect(queued).rejects.toMatchObject({ kind: "CANCELLED" });
    instances.addCapacity();
    await tick();
    expect(instances.streams).toHaveLength(0);
    expect(seen).toEqual([]);
  });

  it("tells the instance the deepest BLS depth of a batch, and id and parameters only for a single request", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy({ maxBatchSize: 4 }), instances, { describe: "m" });
    const batch = [
      scheduler.enqueue(request(1, { context: { blsDepth: 1, id: "a", parameters: { p: 1 } } })),
      scheduler.enqueue(request(2, { context: { blsDepth: 3 } })),
    ];
    instances.addCapacity();
    await tick();
    expect(instances.executions[0]!.context).toEqual({ blsDepth: 3 });
    instances.executions[0]!.complete();
    await Promise.all(batch);
    const single = scheduler.enqueue(request(3, { context: { blsDepth: 0, id: "b", parameters: { p: "x" } } }));
    await tick();
    expect(instances.executions[1]!.context).toEqual({ blsDepth: 0, id: "b", parameters: { p: "x" } });
    instances.executions[1]!.complete();
    await single;
  });

  it("hands a request-level backend its batch as separate requests, so one bad request fails alone", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy({ joinInputs: false }), instances, { describe: "m" });
    const results = [1, -1, 3].map((v) =>
      scheduler.enqueue(request(v)).then(
        (r) => valueOf(r.outputs[0]!),
        (e: Error) => e.message,
      ),
    );
    instances.addCapacity();
    expect(await Promise.all(results)).toEqual([1, "bad request -1", 3]);
    expect(instances.requestBatches).toHaveLength(1); // one execution of three requests
    expect(instances.requestBatches[0]!.map((inputs) => inputs[0]!.shape)).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
  });
});

describe("a batch that fails as a whole", () => {
  it("runs its requests again one at a time, once, so the bad one fails alone", async () => {
    const instances = new ManualInstances(0);
    const splits: number[] = [];
    const scheduler = new RequestScheduler(policy(), instances, {
      describe: "m",
      onBatchSplit: (requests) => splits.push(requests),
    });
    const results = [1, 2, 3].map((v) =>
      scheduler.enqueue(request(v)).then(
        (r) => valueOf(r.outputs[0]!),
        (e: Error) => e.message,
      ),
    );
    instances.addCapacity();
    await tick();
    expect(instances.executions[0]!.inputs[0]!.shape).toEqual([3, 2]);
    instances.executions[0]!.fail(new OperonError("INTERNAL", "request 2 is malformed"));
    await tick();
    expect(splits).toEqual([3]);
    // One at a time, in order; request 2 fails again, alone.
    for (const [index, value] of [1, 2, 3].entries()) {
      const execution = instances.executions[index + 1]!;
      expect(execution.inputs[0]!.shape).toEqual([1, 2]);
      if (value === 2) execution.fail(new OperonError("INTERNAL", "request 2 is malformed"));
      else execution.complete();
      await tick();
    }
    expect(await Promise.all(results)).toEqual([1, "request 2 is malformed", 3]);
    expect(instances.executions).toHaveLength(4);
  });

  it("does not split on UNAVAILABLE (the instance went away) or a batch of one", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy(), instances, { describe: "m" });
    const results = [1, 2].map((v) => scheduler.enqueue(request(v)).catch((e: Error) => e.message));
    instances.addCapacity();
    await tick();
    instances.executions[0]!.fail(new OperonError("UNAVAILABLE", "worker exited"));
    expect(await Promise.all(results)).toEqual(["worker exited", "worker exited"]);
    expect(instances.executions).toHaveLength(1);
  });

  it("splits a request-level execution whose requests all failed with one error (the model threw)", async () => {
    const instances = new ManualInstances(0);
    const scheduler = new RequestScheduler(policy({ joinInputs: false }), instances, { describe: "m" });
    const results = [-1, -1].map((v) =>
      scheduler.enqueue(request(v)).then(
        (r) => valueOf(r.outputs[0]!),
        (e: Error) => e.message,
      ),
    );
    instances.addCapacity();
    await tick();
    expect(instances.requestBatches.map((batch) => batch.length)).toEqual([2]);
    // Alone, each request runs as a single execution.
    instances.executions[0]!.complete();
    await tick();
    instances.executions[1]!.fail(new OperonError("INVALID_ARG", "still bad"));
    expect(await Promise.all(results)).toEqual([-1, "still bad"]);
  });
});

describe("queue delay at microsecond resolution", () => {
  /** One instance, max_queue_delay_microseconds: 100, time and turns in the test's hands. */
  const delayed100us = () => {
    const clock = new FakeClock();
    const instances = new ManualInstances(1);
    const scheduler = new RequestScheduler(policy({ maxQueueDelayNs: 100_000 }), instances, {
      describe: "model 'm'",
      clock,
    });
    return { clock, instances, scheduler };
  };

  it("sends a lone request once max_queue_delay_microseconds: 100 has passed, not a millisecond later", async () => {
    const { clock, instances, scheduler } = delayed100us();
    const result = scheduler.enqueue(request(1));
    expect(instances.executions).toHaveLength(0);
    clock.advance(90_000);
    expect(instances.executions).toHaveLength(0);
    clock.advance(15_000); // 105 µs after it arrived
    expect(instances.executions).toHaveLength(1);
    instances.executions[0]!.complete();
    await expect(result).resolves.toMatchObject({ outputs: [{ name: "out_x" }] });
  });

  it("does not turn the event loop over waiting out a delay while every instance is busy; capacity sends the batch", async () => {
    const { clock, instances, scheduler } = delayed100us();
    const first = scheduler.enqueue(request(1));
    clock.advance(105_000);
    expect(instances.executions).toHaveLength(1); // the only instance is now busy
    const second = scheduler.enqueue(request(2));
    const third = scheduler.enqueue(request(3));
    // Without an instance to send to, no timer checks the clock on every turn.
    expect(clock.pendingImmediates).toBe(0);
    clock.advance(500_000);
    expect(instances.executions).toHaveLength(1);
    instances.executions[0]!.complete();
    await first;
    // The delay of the queued two has passed: the freed instance takes them as one batch, at the end of this turn.
    expect(clock.pendingImmediates).toBe(1);
    clock.turn();
    expect(instances.executions).toHaveLength(2);
    expect(instances.executions[1]!.inputs[0]!.shape).toEqual([2, 2]);
    instances.executions[1]!.complete();
    await Promise.all([second, third]);
  });

  it("waits out the rest of the delay when capacity comes back before it has passed", async () => {
    const { clock, instances, scheduler } = delayed100us();
    const first = scheduler.enqueue(request(1));
    clock.advance(105_000);
    const second = scheduler.enqueue(request(2));
    clock.advance(20_000);
    instances.executions[0]!.complete();
    await first;
    expect(instances.executions).toHaveLength(1); // 20 µs into its 100 µs delay: it still waits
    clock.advance(90_000);
    expect(instances.executions).toHaveLength(2);
    instances.executions[1]!.complete();
    await second;
  });

  it("sends at once when every request its clients keep in flight is here: concurrency 1 pays no delay", async () => {
    const { clock, instances, scheduler } = delayed100us();
    // One client, one request at a time. Until 16 have arrived there is no evidence: each waits out the delay.
    for (let i = 0; i < 15; i++) {
      const result = scheduler.enqueue(request(i));
      clock.turn();
      expect(instances.executions).toHaveLength(i);
      clock.advance(105_000);
      expect(instances.executions).toHaveLength(i + 1);
      instances.executions[i]!.complete();
      await result;
    }
    // From the 16th on, nothing can join a lone request before it is answered: each goes at the end of its turn.
    for (let i = 15; i < 18; i++) {
      const next = scheduler.enqueue(request(i));
      clock.turn();
      expect(instances.executions).toHaveLength(i + 1);
      expect(instances.executions[i]!.inputs[0]!.shape).toEqual([1, 2]);
      instances.executions[i]!.complete();
      await next;
    }
  });

  it("still waits while fewer requests are here than the clients have kept in flight", async () => {
    const { clock, instances, scheduler } = delayed100us();
    // Two clients: pairs that arrive together and run as one batch.
    for (let pair = 0; pair < 8; pair++) {
      const both = [scheduler.enqueue(request(2 * pair)), scheduler.enqueue(request(2 * pair + 1))];
      clock.advance(105_000);
      instances.executions[pair]!.complete();
      await Promise.all(both);
    }
    const first = scheduler.enqueue(request(100));
    clock.turn();
    expect(instances.executions).toHaveLength(8); // one of two is here: the other may still join
    clock.advance(40_000);
    const second = scheduler.enqueue(request(101));
    clock.turn();
    expect(instances.executions).toHaveLength(9); // both here: sent without waiting out the rest of the delay
    expect(instances.executions[8]!.inputs[0]!.shape).toEqual([2, 2]);
    instances.executions[8]!.complete();
    await Promise.all([first, second]);
  });

  it("costs no event-loop turn when an instance comes back to an empty queue", async () => {
    const { clock, instances, scheduler } = delayed100us();
    const only = scheduler.enqueue(request(1));
    clock.advance(105_000);
    instances.executions[0]!.complete();
    await only;
    expect(clock.pendingImmediates).toBe(0);
    // With a request waiting, the returning instance takes it at the end of the turn.
    const first = scheduler.enqueue(request(2));
    clock.advance(105_000);
    const second = scheduler.enqueue(request(3));
    instances.executions[1]!.complete();
    await first;
    expect(clock.pendingImmediates).toBe(1);
    clock.advance(105_000);
    expect(instances.executions).toHaveLength(3);
    instances.executions[2]!.complete();
    await second;
  });

  it("without a queue delay, still gathers what one turn brings when the clients keep several in flight", async () => {
    const clock = new FakeClock();
    const instances = new ManualInstances(1);
    const scheduler = new RequestScheduler(policy({ maxQueueDelayNs: 0 }), instances, { describe: "model 'm'", clock });
    // Two clients: pairs read in one turn run as one batch.
    for (let pair = 0; pair < 8; pair++) {
      const both = [scheduler.enqueue(request(2 * pair)), scheduler.enqueue(request(2 * pair + 1))];
      expect(instances.executions).toHaveLength(pair); // the first of a pair does not go alone before the turn ends
      clock.turn();
      expect(instances.executions[pair]!.inputs[0]!.shape).toEqual([2, 2]);
      instances.executions[pair]!.complete();
      await Promise.all(both);
    }
  });

  it("joins the requests that arrive within the delay into one batch", async () => {
    const { clock, instances, scheduler } = delayed100us();
    const first = scheduler.enqueue(request(1));
    clock.advance(40_000);
    const second = scheduler.enqueue(request(2));
    clock.advance(70_000);
    expect(instances.executions).toHaveLength(1);
    expect(instances.executions[0]!.inputs[0]!.shape).toEqual([2, 2]);
    instances.executions[0]!.complete();
    await Promise.all([first, second]);
  });
});

describe("batch jobs' requests (background) ride along in online executions", () => {
  const MS = 1_000_000;
  /**
   * One instance, batches of 4, time in the test's hands; by default two priority levels with a job's requests
   * at the lowest (`levels: false`: a model without levels, every request at level 0).
   */
  const withJobs = ({ levels = true } = {}) => {
    const clock = new FakeClock();
    const instances = new ManualInstances(1);
    const scheduler = new RequestScheduler(
      policy({ maxBatchSize: 4, priorityLevels: levels ? 2 : 0, defaultPriorityLevel: levels ? 1 : 0 }),
      instances,
      { describe: "model 'm'", clock },
    );
    const online = (value: number) => scheduler.enqueue(request(value, { level: levels ? 1 : 0 }));
    const job = (value: number, width = 2) =>
      scheduler.enqueue(request(value, { level: levels ? 2 : 0, background: true, width }));
    return { clock, instances, online, job };
  };
  const rows = (tensor: Tensor) =>
    Array.from(new Float32Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.length / 4));

  /** An online request executed for 10 ms: the scheduler's measure of an execution, and the last online arrival at 0. */
  async function tenMillisecondExecution(context: ReturnType<typeof withJobs>): Promise<void> {
    const first = context.online(1);
    context.clock.turn();
    expect(context.instances.executions).toHaveLength(1);
    context.clock.advance(10 * MS);
    context.instances.executions[0]!.complete();
    await first;
  }

  it("starts no execution of a job's requests alone while online requests keep arriving; they fill the online ones", async () => {
    const context = withJobs();
    const { clock, instances, online, job } = context;
    await tenMillisecondExecution(context);
    // A job's request 10 ms after the last online one, within twice an execution's time of it: it waits.
    const riding = job(7);
    clock.turn();
    clock.advance(5 * MS);
    expect(instances.executions).toHaveLength(1);
    // The next online request starts an execution, and the job's request fills a row of it, after it.
    const second = online(2);
    clock.turn();
    expect(instances.executions).toHaveLength(2);
    expect(rows(instances.executions[1]!.inputs[0]!)).toEqual([2, 2, 7, 7]);
    instances.executions[1]!.complete();
    await Promise.all([second, riding]);
  });

  it("takes an execution of its own once no online request came for twice the recent execution time (a valley)", async () => {
    const context = withJobs();
    const { clock, instances, job } = context;
    await tenMillisecondExecution(context);
    const alone = job(7); // 10 ms after the online request
    clock.turn();
    clock.advance(9 * MS); // 19 ms after it: not yet
    expect(instances.executions).toHaveLength(1);
    clock.advance(2 * MS); // 21 ms: past 2 x 10 ms
    expect(instances.executions).toHaveLength(2);
    expect(rows(instances.executions[1]!.inputs[0]!)).toEqual([7, 7]);
    instances.executions[1]!.complete();
    await alone;
  });

  it("does not hold a job's requests back for a model whose executions take under a millisecond", async () => {
    const { clock, instances, online, job } = withJobs();
    const first = online(1);
    clock.turn();
    clock.advance(500_000); // 0.5 ms
    instances.executions[0]!.complete();
    await first;
    const result = job(7);
    clock.turn();
    expect(instances.executions).toHaveLength(2);
    instances.executions[1]!.complete();
    await result;
  });

  it("runs a job's requests at once with no online traffic, or before any execution was timed", async () => {
    const { clock, instances, job } = withJobs();
    const result = job(7);
    clock.turn();
    expect(instances.executions).toHaveLength(1);
    instances.executions[0]!.complete();
    await result;
  });

  it("puts an online request ahead of a job's earlier request at the same level (a model without priority levels)", async () => {
    const context = withJobs({ levels: false });
    const { clock, instances, online, job } = context;
    await tenMillisecondExecution(context);
    // A job's request of another shape queued first, then an online one: the online one goes first.
    const held = job(7, 3);
    const second = online(2);
    clock.turn();
    expect(instances.executions).toHaveLength(2);
    expect(rows(instances.executions[1]!.inputs[0]!)).toEqual([2, 2]);
    clock.advance(10 * MS);
    instances.executions[1]!.complete();
    await second;
    // The job's request waits for its valley (20 ms after that online request, at 10 ms), then runs.
    clock.advance(9 * MS);
    expect(instances.executions).toHaveLength(2);
    clock.advance(2 * MS);
    expect(instances.executions).toHaveLength(3);
    expect(rows(instances.executions[2]!.inputs[0]!)).toEqual([7, 7, 7]);
    instances.executions[2]!.complete();
    await held;
  });
});
