import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import { SequenceBatcher, type SequenceDispatcher, type SequenceRequest } from "./sequence-batcher.js";
import { sequenceFlagsOf, sequencePolicyFromConfig, type SequencePolicy } from "./sequence-policy.js";
import type { ReservedInstance } from "./request-scheduler.js";
import { FakeClock } from "./testing/fake-clock.js";

const TIMING = { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };

/**
 * Instances that run an accumulator: OUT = ACC_IN + X, ACC_OUT = the same
 * (the implicit state), row by row; executions complete when the test says.
 */
class Accumulators implements SequenceDispatcher {
  readonly executions: Array<{ instance: string; inputs: Tensor[]; complete(): void }> = [];
  private listener: () => void = () => undefined;
  readonly busy = new Set<string>();
  isDead = false;

  constructor(private readonly names: string[]) {}

  liveInstanceNames(): string[] {
    return this.names;
  }

  onCapacity(listener: () => void): void {
    this.listener = listener;
  }

  acquireOn(name: string): ReservedInstance | undefined {
    if (this.busy.has(name)) return undefined;
    this.busy.add(name);
    const run = (inputs: Tensor[]) =>
      new Promise<{ outputs: Tensor[]; timing: typeof TIMING }>((resolve) => {
        this.executions.push({
          instance: name,
          inputs,
          complete: () => {
            const x = inputs.find((tensor) => tensor.name === "X")!;
            const acc = inputs.find((tensor) => tensor.name === "ACC_IN")!;
            const out = Buffer.alloc(x.data.length);
            for (let i = 0; i < x.data.length / 4; i += 1)
              out.writeFloatLE(x.data.readFloatLE(i * 4) + acc.data.readFloatLE(i * 4), i * 4);
            this.busy.delete(name);
            resolve({
              outputs: [
                { name: "OUT", datatype: "FP32", shape: x.shape, data: out },
                { name: "ACC_OUT", datatype: "FP32", shape: x.shape, data: Buffer.from(out) },
              ],
              timing: TIMING,
            });
            queueMicrotask(() => this.listener());
          },
        });
      });
    return {
      run,
      runRequests: () => Promise.reject(new Error("not used")),
      runStream: () => Promise.reject(new Error("not used")),
    };
  }
}

function policy(extra: Record<string, unknown> = {}, maxBatchSize = 2): SequencePolicy {
  return sequencePolicyFromConfig({
    name: "acc",
    max_batch_size: maxBatchSize,
    sequence_batching: {
      max_sequence_idle_microseconds: 1000,
      control_input: [
        { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] },
        { name: "CORRID", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64" }] },
      ],
      state: [{ input_name: "ACC_IN", output_name: "ACC_OUT", data_type: "TYPE_FP32", dims: [1] }],
      ...extra,
    },
  })!;
}

function request(id: number, x: number, flags: { start?: boolean; end?: boolean } = {}): SequenceRequest {
  const data = Buffer.alloc(4);
  data.writeFloatLE(x);
  return {
    inputs: [{ name: "X", datatype: "FP32", shape: [1, 1], data }],
    outputNames: undefined,
    batchSize: 1,
    level: 0,
    timeoutNs: 0,
    sequence: sequenceFlagsOf(
      { sequence_id: id, sequence_start: flags.start ?? false, sequence_end: flags.end ?? false },
      "acc",
    ),
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
}

function batcher(instances: Accumulators, clock: FakeClock, sequencePolicy = policy()) {
  return new SequenceBatcher(sequencePolicy, instances, { describe: "model 'acc'", joinInputs: true, clock });
}

describe("SequenceBatcher", () => {
  it("joins one row per sequence, feeds controls and state, keeps the state and hides it from the response", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    // Direct with a queue delay: a batch waits for more rows unless every sequence the instance holds has one.
    const scheduler = batcher(
      instances,
      clock,
      policy({ direct: { max_queue_delay_microseconds: 1000 }, max_sequence_idle_microseconds: 60_000_000 }),
    );
    const first = [
      scheduler.enqueue(request(1, 5, { start: true })),
      scheduler.enqueue(request(2, 7, { start: true })),
    ];
    expect(instances.executions).toHaveLength(1);
    const joined = instances.executions[0]!.inputs;
    expect(joined.map((tensor) => [tensor.name, tensor.shape])).toEqual([
      ["X", [1, 1]],
      ["START", [1, 1]],
      ["CORRID", [1, 1]],
      ["ACC_IN", [1, 1]],
    ]);
    // The second sequence arrived while the instance was busy: it waits for the next execution.
    instances.executions[0]!.complete();
    await settle();
    // Sequence 2's row waits up to the queue delay for sequence 1's next one, then goes alone.
    expect(instances.executions).toHaveLength(1);
    clock.advance(2_000_000);
    expect(instances.executions).toHaveLength(2);
    expect(instances.executions[1]!.inputs.find((tensor) => tensor.name === "CORRID")!.data.readBigUInt64LE()).toBe(2n);
    instances.executions[1]!.complete();
    const results = await Promise.all(first);
    expect(results.map((result) => result.outputs.map((output) => output.name))).toEqual([["OUT"], ["OUT"]]);
    // Next requests of both sequences: one execution of two rows, each row with its own state.
    const second = [scheduler.enqueue(request(1, 1)), scheduler.enqueue(request(2, 1, { end: true }))];
    expect(instances.executions).toHaveLength(3);
    const batch = instances.executions[2]!.inputs;
    expect(batch.find((tensor) => tensor.name === "X")!.shape).toEqual([2, 1]);
    expect(batch.find((tensor) => tensor.name === "START")!.data.readInt32LE(0)).toBe(0);
    instances.executions[2]!.complete();
    const sums = (await Promise.all(second)).map((result) => result.outputs[0]!.data.readFloatLE(0));
    expect(sums).toEqual([6, 8]);
    expect(scheduler.sequenceCount).toBe(1);
  });

  it("runs a sequence's requests one at a time, in order", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0", "i1"]);
    const scheduler = batcher(instances, clock);
    const results = [
      scheduler.enqueue(request(9, 1, { start: true })),
      scheduler.enqueue(request(9, 2)),
      scheduler.enqueue(request(9, 3, { end: true })),
    ];
    for (let step = 0; step < 3; step += 1) {
      expect(instances.executions).toHaveLength(step + 1);
      // Always the same instance: the sequence's slot.
      expect(instances.executions[step]!.instance).toBe(instances.executions[0]!.instance);
      instances.executions[step]!.complete();
      await settle();
    }
    expect((await Promise.all(results)).map((result) => result.outputs[0]!.data.readFloatLE(0))).toEqual([1, 3, 6]);
  });

  it("keeps sequences beyond the slots in a backlog until a slot is freed", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    const scheduler = batcher(instances, clock, policy({}, 1));
    const a = scheduler.enqueue(request(1, 1, { start: true }));
    const b = scheduler.enqueue(request(2, 1, { start: true, end: true }));
    instances.executions[0]!.complete();
    await a;
    await settle();
    expect(instances.executions).toHaveLength(1);
    expect(scheduler.backlogLength).toBe(1);
    const end = scheduler.enqueue(request(1, 1, { end: true }));
    instances.executions[1]!.complete();
    await end;
    clock.turn();
    await settle();
    expect(instances.executions).toHaveLength(3);
    instances.executions[2]!.complete();
    expect((await b).outputs[0]!.data.readFloatLE(0)).toBe(1);
  });

  it("releases an idle sequence after max_sequence_idle_microseconds and says so to its next request", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    const scheduler = batcher(instances, clock);
    const first = scheduler.enqueue(request(3, 1, { start: true }));
    instances.executions[0]!.complete();
    await first;
    clock.advance(999_000);
    expect(scheduler.sequenceCount).toBe(1);
    clock.advance(2_000_000);
    clock.turn();
    expect(scheduler.sequenceCount).toBe(0);
    expect(() => scheduler.enqueue(request(3, 1))).toThrow(
      /sequence 3 of model 'acc' was released after it was idle for longer than max_sequence_idle_microseconds \(1000 µs\)/,
    );
    // A new START with the id begins a new sequence from the initial state.
    const again = scheduler.enqueue(request(3, 4, { start: true }));
    instances.executions[1]!.complete();
    expect((await again).outputs[0]!.data.readFloatLE(0)).toBe(4);
  });

  it("releases each sequence when its own idle time is up, however their activity interleaves", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0", "i1"]);
    const scheduler = batcher(instances, clock);
    const a = scheduler.enqueue(request(1, 1, { start: true }));
    instances.executions[0]!.complete();
    await a;
    clock.advance(500_000);
    const b = scheduler.enqueue(request(2, 1, { start: true }));
    instances.executions[1]!.complete();
    await b;
    clock.advance(700_000); // a: idle 1.2 ms, b: 0.7 ms
    clock.turn();
    expect(() => scheduler.enqueue(request(1, 1))).toThrow(/sequence 1 .* was released after it was idle/);
    expect(scheduler.sequenceCount).toBe(1);
    clock.advance(400_000); // b: 1.1 ms
    clock.turn();
    expect(scheduler.sequenceCount).toBe(0);
  });

  it("fails the sequences of a lost instance, queued requests now and later ones on arrival", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    const scheduler = batcher(instances, clock);
    const running = scheduler.enqueue(request(5, 1, { start: true }));
    const queued = scheduler.enqueue(request(5, 2));
    scheduler.instanceLost("i0");
    await expect(queued).rejects.toThrow(/sequence 5 of model 'acc' was lost: the worker of instance 'i0'/);
    instances.executions[0]!.complete();
    await running;
    let error: unknown;
    try {
      scheduler.enqueue(request(5, 3));
    } catch (caught) {
      error = caught;
    }
    expect((error as OperonError).kind).toBe("UNAVAILABLE");
  });

  it("refuses a START while the sequence still has requests, and requests after END", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    const scheduler = batcher(instances, clock);
    const running = scheduler.enqueue(request(6, 1, { start: true, end: true }));
    expect(() => scheduler.enqueue(request(6, 1, { start: true }))).toThrow(/has requests queued or running/);
    expect(() => scheduler.enqueue(request(6, 1))).toThrow(/already received its END request/);
    instances.executions[0]!.complete();
    await running;
    expect(() => scheduler.enqueue(request(6, 1))).toThrow(/must specify the START flag/);
  });

  it("holds at most 1 GiB of state per model: the START beyond answers UNAVAILABLE", () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    // 64 MiB of state per sequence: 16 sequences fit in 1 GiB.
    const big = sequencePolicyFromConfig({
      name: "acc",
      max_batch_size: 0,
      sequence_batching: {
        state: [{ input_name: "ACC_IN", output_name: "ACC_OUT", data_type: "TYPE_FP32", dims: [16 * 1024 * 1024] }],
      },
    })!;
    const scheduler = batcher(instances, clock, big);
    for (let id = 1; id <= 16; id += 1) void scheduler.enqueue({ ...request(id, 1, { start: true }), batchSize: 1 });
    expect(scheduler.sequenceCount).toBe(16);
    let error: unknown;
    try {
      scheduler.enqueue(request(17, 1, { start: true }));
    } catch (caught) {
      error = caught;
    }
    expect((error as OperonError).kind).toBe("UNAVAILABLE");
    expect((error as OperonError).message).toMatch(/already holds 16 sequences, its limit/);
  });

  it("stop() fails the backlog at once and ends every sequence", async () => {
    const clock = new FakeClock();
    const instances = new Accumulators(["i0"]);
    const scheduler = batcher(instances, clock, policy({}, 1));
    const holder = scheduler.enqueue(request(1, 1, { start: true }));
    const waiting = scheduler.enqueue(request(2, 1, { start: true }));
    const stopping = scheduler.stop(1000);
    await expect(waiting).rejects.toThrow(/is unloading: sequence 2 ended before it got a slot/);
    instances.executions[0]!.complete();
    await holder;
    await stopping;
    expect(scheduler.sequenceCount).toBe(0);
    expect(() => scheduler.enqueue(request(1, 1))).toThrow(/is unloading/);
  });
});

describe("sequence policy and flags", () => {
  it("reads strategies, slots and idle defaults", () => {
    expect(policy().strategy).toBe("direct");
    expect(policy().slotsPerInstance).toBe(2);
    const oldest = policy({ oldest: { max_candidate_sequences: 16, max_queue_delay_microseconds: 50 } });
    expect([oldest.strategy, oldest.slotsPerInstance, oldest.maxQueueDelayNs]).toEqual(["oldest", 16, 50_000]);
    const defaults = sequencePolicyFromConfig({ name: "m", max_batch_size: 0, sequence_batching: {} })!;
    expect([defaults.maxIdleNs, defaults.slotsPerInstance]).toEqual([1_000_000_000, 1]);
  });

  it("refuses malformed controls and states, naming them", () => {
    const bad = (sequence_batching: Record<string, unknown>) => () =>
      sequencePolicyFromConfig({ name: "m", max_batch_size: 2, sequence_batching });
    expect(
      bad({
        control_input: [
          {
            name: "S",
            control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1], fp32_false_true: [0, 1] }],
          },
        ],
      }),
    ).toThrow(/control_input 'S': CONTROL_SEQUENCE_START needs exactly one of int32_false_true/);
    expect(
      bad({ control_input: [{ name: "C", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_FP32" }] }] }),
    ).toThrow(/CONTROL_SEQUENCE_CORRID needs data_type TYPE_UINT64/);
    expect(bad({ state: [{ input_name: "s", output_name: "t", data_type: "TYPE_FP32", dims: [-1] }] })).toThrow(
      /state 's': dims \[-1\] must be fixed/,
    );
    expect(
      bad({ state: [{ input_name: "s", output_name: "t", data_type: "TYPE_FP32", dims: [100000, 100000] }] }),
    ).toThrow(/bytes per sequence, more than the 67108864 allowed/);
  });

  it("parses correlation ids: uint64 (also beyond 2^53) and strings; refuses the rest", () => {
    expect(sequenceFlagsOf({ sequence_id: 18446744073709551615n }, "m").id).toBe(18446744073709551615n);
    expect(sequenceFlagsOf({ sequence_id: "a", sequence_start: true }, "m")).toMatchObject({ id: "a", start: true });
    expect(sequenceFlagsOf({ sequence_id: 5 }, "m").key).not.toBe(sequenceFlagsOf({ sequence_id: "5" }, "m").key);
    expect(() => sequenceFlagsOf({ sequence_id: 18446744073709551616n }, "m")).toThrow(/unsigned 64-bit integer/);
    expect(() => sequenceFlagsOf({ sequence_id: 2 ** 60 }, "m")).toThrow(/unsigned 64-bit integer/);
    expect(() => sequenceFlagsOf({ sequence_id: "x".repeat(300) }, "m")).toThrow(/longer than 256 bytes/);
    expect(() => sequenceFlagsOf({ sequence_id: "" }, "m")).toThrow(/non-zero or non-empty correlation ID/);
  });
});
