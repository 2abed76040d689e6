import { EventEmitter } from "node:events";
import type { Tensor } from "@operon/protocol/tensor";
import type { IoInfo } from "@operon/protocol/worker-wire";
import type { LoopHold, LoopHoldClock } from "./loop-hold-clock.js";
import { describe, expect, it } from "vitest";
import { AdaptiveInstance, SlowExecutions, type AdaptiveInstanceOptions } from "./adaptive-instance.js";
import type {
  BackendInstance,
  BlsRequestHandler,
  InstanceIsolation,
  WorkerExecuteResult,
  WorkerExitInfo,
} from "./backend-instance.js";

const FIXED_IO: IoInfo[] = [{ name: "x", datatype: "FP32", shape: [-1, 4] }];

/** A backend instance whose executions echo their inputs; the inline kind reports each one's time as `reportNs()`. */
class FakeInstance extends EventEmitter implements BackendInstance {
  readonly pid = process.pid;
  readonly startedAt = Date.now();
  readonly instanceName = "m_0_0";
  inFlight = 0;
  onBlsRequest: BlsRequestHandler | undefined;
  readonly batches: number[][] = [];
  stopped = false;
  failLoad = false;
  holdClock: LoopHoldClock = "wall";
  holdCheckOverNs = 0;
  /** What the checked clock says of each execution. */
  preempted = false;
  /** Each execution spins this long (ns of CPU): what the probe measures. */
  busyNs = 0;

  constructor(
    readonly isolation: InstanceIsolation,
    private readonly io: IoInfo[],
    private readonly onDuration?: (hold: LoopHold, clock: LoopHoldClock) => void,
    public reportNs = () => 1_000,
  ) {
    super();
  }

  async load(): Promise<{ inputs: IoInfo[]; outputs: IoInfo[] }> {
    if (this.failLoad) throw new Error(`${this.isolation} load failed`);
    return { inputs: this.io, outputs: this.io };
  }

  async execute(inputs: Tensor[]): Promise<WorkerExecuteResult> {
    this.batches.push(inputs.map((input) => input.shape[0]!));
    // Spins until the process used busyNs of CPU: the probe reads CPU-bounded time (loop-hold-clock.ts).
    const start = process.cpuUsage();
    while (this.busyNs > 0) {
      const used = process.cpuUsage(start);
      if ((used.user + used.system) * 1000 >= this.busyNs) break;
    }
    // As the real clock: whether the OS interrupted it is read only for executions over holdCheckOverNs.
    const ns = this.reportNs();
    const checked = this.holdClock === "checked" && ns > this.holdCheckOverNs;
    this.onDuration?.({ ns, preempted: checked ? this.preempted : undefined }, this.holdClock);
    return { outputs: inputs, timing: { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 } };
  }

  async executeStream(): Promise<void> {}

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.emit("exit", { code: 0, signal: null, expected: true } satisfies WorkerExitInfo);
  }

  kill(): void {
    void this.stop();
  }

  crash(): void {
    this.emit("exit", { code: 1, signal: null, expected: false } satisfies WorkerExitInfo);
  }
}

function adaptive(
  options: {
    io?: IoInfo[];
    probeBudgetNs?: number;
    outrightNs?: number;
    failThreadLoad?: boolean;
    inlineBusyNs?: number;
  } = {},
) {
  const placed: Array<[string, string]> = [];
  const failures: string[] = [];
  const started: { inline?: FakeInstance; thread?: FakeInstance } = {};
  const prepared: FakeInstance[] = [];
  const config: AdaptiveInstanceOptions = {
    instanceName: "m_0_0",
    maxBatchSize: 8,
    startInline: (onDuration) => {
      started.inline = new FakeInstance("inline", options.io ?? FIXED_IO, onDuration);
      started.inline.busyNs = options.inlineBusyNs ?? 0;
      return started.inline;
    },
    startThread: () => {
      const thread = new FakeInstance("thread", options.io ?? FIXED_IO);
      thread.failLoad = options.failThreadLoad ?? false;
      return (started.thread = thread);
    },
    prepareThread: async (thread) => void prepared.push(thread as FakeInstance),
    onPlaced: (where, reason) => placed.push([where, reason]),
    onMoveFailed: (error) => failures.push(error.message),
    ...(options.probeBudgetNs !== undefined ? { probeBudgetNs: options.probeBudgetNs } : {}),
    ...(options.outrightNs !== undefined ? { slowExecution: { outrightNs: options.outrightNs } } : {}),
  };
  return { instance: new AdaptiveInstance(config), placed, failures, started, prepared };
}

const ROW: Tensor[] = [{ name: "x", datatype: "FP32", shape: [1, 4], data: Buffer.alloc(16) }];
const LOAD = { backend: "onnxruntime", modelPath: "/m/1/model.onnx", config: {} };

describe("AdaptiveInstance", () => {
  it("stays on the event loop when the largest batch runs within the budget, and probes with that batch", async () => {
    const { instance, placed, started } = adaptive({ probeBudgetNs: 1e9 });
    await instance.load(LOAD);
    expect(instance.isolation).toBe("inline");
    expect(placed).toEqual([["inline", expect.stringMatching(/^a batch of 8 runs in \d+ µs \(budget 1000000 µs\)$/)]]);
    // The probe: warm-up and timed runs, each of max_batch_size rows.
    expect(started.inline!.batches.length).toBeGreaterThan(10);
    expect(new Set(started.inline!.batches.flat())).toEqual(new Set([8]));
    expect(started.thread).toBeUndefined();
    await instance.execute(ROW);
    expect(started.inline!.batches.at(-1)).toEqual([1]);
  });

  it("ends the probe at the first run as long as one that moves a serving instance at once", async () => {
    const { instance, placed, started } = adaptive({ probeBudgetNs: 1, outrightNs: 1 });
    await instance.load(LOAD);
    expect(instance.isolation).toBe("thread");
    // The first run may take 10 times the abort limit (1 ns here): the fake's take microseconds, so one run.
    expect(started.inline!.batches.length).toBe(1);
    expect(placed).toEqual([["thread", expect.stringMatching(/^a batch of 8 ran once in \d+ µs \(budget 0 µs\)$/)]]);
  });

  it("moves to a thread before serving when the largest batch runs over the budget", async () => {
    // 300 µs a run against 100: over the budget, under the abort limit (unless the host preempts a run).
    const { instance, placed, started, prepared } = adaptive({ probeBudgetNs: 100_000, inlineBusyNs: 300_000 });
    await instance.load(LOAD);
    expect(instance.isolation).toBe("thread");
    expect(placed).toEqual([
      ["thread", expect.stringMatching(/^a batch of 8 (runs|ran once) in \d+ µs \(budget 100 µs\)$/)],
    ]);
    expect(prepared).toEqual([started.thread]);
    expect(started.inline!.stopped).toBe(true);
    await instance.execute(ROW);
    expect(started.thread!.batches).toEqual([[1]]);
  });

  it("moves to a thread without a probe when the largest request is unknown (a dynamic dimension)", async () => {
    const { instance, placed, started } = adaptive({ io: [{ name: "x", datatype: "FP32", shape: [-1, -1] }] });
    await instance.load(LOAD);
    expect(instance.isolation).toBe("thread");
    expect(placed).toEqual([
      ["thread", "the largest request it can be sent is unknown: input 'x' has a dynamic dimension (axis 1)"],
    ]);
    expect(started.inline!.batches).toEqual([]);
  });

  it("fails the load when the thread it must move to cannot load", async () => {
    const { instance } = adaptive({ probeBudgetNs: 0, failThreadLoad: true });
    await expect(instance.load(LOAD)).rejects.toThrow(/thread load failed/);
  });

  it("moves to a thread while serving after executions that held the loop, and sends it the later batches", async () => {
    const { instance, placed, started } = adaptive({ probeBudgetNs: 1e9 });
    await instance.load(LOAD);
    const inline = started.inline!;
    expect(inline.holdClock).toBe("wall");
    // The checked clock answers only for executions that could count as slow (one /proc read, not two, for the rest).
    expect(inline.holdCheckOverNs).toBe(1e6);
    // A slow execution by the wall clock is a suspicion only: the next ones are timed by the checked clock.
    inline.reportNs = () => 2e6;
    await instance.execute(ROW);
    expect(inline.holdClock).toBe("checked");
    // Two slow ones among fast ones: not yet (a page fault or a GC pause can lengthen one run).
    await instance.execute(ROW);
    await instance.execute(ROW);
    inline.reportNs = () => 20_000;
    await instance.execute(ROW);
    expect(instance.isolation).toBe("inline");
    inline.reportNs = () => 2e6;
    await instance.execute(ROW);
    await until(() => instance.isolation === "thread");
    expect(placed.at(-1)).toEqual([
      "thread",
      "3 of its last 1000 executions held the gateway's event loop over 1 ms (the last 2.0 ms)",
    ]);
    expect(inline.stopped).toBe(true);
    await instance.execute(ROW);
    expect(started.thread!.batches).toEqual([[1]]);
  });

  it("stays inline when the checked clock clears a suspicion (the OS preempted the gateway), back on the wall clock", async () => {
    const { instance, started } = adaptive({ probeBudgetNs: 1e9 });
    await instance.load(LOAD);
    const inline = started.inline!;
    inline.reportNs = () => 50e6;
    await instance.execute(ROW);
    expect(inline.holdClock).toBe("checked");
    // Long executions the OS interrupted count for nothing; the others are fast.
    inline.preempted = true;
    for (let i = 0; i < 10; i += 1) await instance.execute(ROW);
    inline.preempted = false;
    inline.reportNs = () => 20_000;
    for (let i = 0; i < 990; i += 1) await instance.execute(ROW);
    expect(inline.holdClock).toBe("wall");
    expect(instance.isolation).toBe("inline");
    expect(started.thread).toBeUndefined();
  });

  it("stays on the event loop, saying why, when the move fails while serving", async () => {
    const { instance, failures, started } = adaptive({ probeBudgetNs: 1e9, failThreadLoad: true });
    await instance.load(LOAD);
    started.inline!.reportNs = () => 50e6;
    await instance.execute(ROW);
    await instance.execute(ROW);
    await until(() => failures.length > 0);
    expect(failures).toEqual(["thread load failed"]);
    expect(instance.isolation).toBe("inline");
    expect(started.inline!.stopped).toBe(false);
  });

  it("reports the exit of the instance it runs on, not the inline one's it left", async () => {
    const { instance, started } = adaptive({ probeBudgetNs: 0 });
    const exits: WorkerExitInfo[] = [];
    instance.on("exit", (info: WorkerExitInfo) => exits.push(info));
    await instance.load(LOAD);
    expect(started.inline!.stopped).toBe(true);
    expect(exits).toEqual([]);
    started.thread!.crash();
    expect(exits).toEqual([{ code: 1, signal: null, expected: false }]);
  });

  it("hands its BLS handler to the thread it moves to", async () => {
    const { instance, started } = adaptive({ probeBudgetNs: 0 });
    const handler: BlsRequestHandler = async () => ({ outputs: [] });
    instance.onBlsRequest = handler;
    await instance.load(LOAD);
    expect(started.thread!.onBlsRequest).toBe(handler);
  });
});

describe("SlowExecutions", () => {
  it("moves on one execution over the outright limit", () => {
    expect(new SlowExecutions().note(11e6)).toBe("an execution held the gateway's event loop for 11.0 ms");
  });

  it("counts slow executions within the window only", () => {
    const slow = new SlowExecutions({ window: 5 });
    expect(slow.note(2e6)).toBeUndefined();
    expect(slow.note(2e6)).toBeUndefined();
    for (let i = 0; i < 4; i += 1) expect(slow.note(10_000)).toBeUndefined();
    // The first two slow ones are out of the last five: this third one is the only one in it.
    expect(slow.note(2e6)).toBeUndefined();
    expect(slow.note(2e6)).toBeUndefined();
    expect(slow.note(2e6)).toMatch(/^3 of its last 5 executions/);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}
