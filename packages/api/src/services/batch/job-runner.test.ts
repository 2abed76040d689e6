import { describe, expect, it } from "vitest";
import { GatewayError, type GatewayClient } from "../gateway/gateway-client.js";
import { AimdLimiter } from "./aimd.js";
import type { GatewayLane } from "./gateway-lanes.js";
import type { PlannedInput } from "./input-mapping.js";
import type { JobFiles } from "./job-files.js";
import { JobRunner, type ChunkOutcome, type RowLanes } from "./job-runner.js";

/** X = [a, b] a row, as a tensor input of a model that batches. */
const planned: PlannedInput[] = [
  { mapping: { input: "X", kind: "tensor", columns: ["a", "b"] }, datatype: "FP32", shape: [1, 2], listColumn: false },
];
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A model that answers Y = a + b a row; a row with a < 0 makes the whole request fail (400), as a bad input would. */
function fakeGateway(requests: number[][]): GatewayClient {
  return {
    infer: async (_name: string, _version: string | undefined, header: { inputs: Array<{ data: number[] }> }) => {
      const data = header.inputs[0]?.data ?? [];
      const rows = data.length / 2;
      requests.push(Array.from({ length: rows }, (_, i) => data[2 * i] as number));
      if (Array.from({ length: rows }, (_, i) => data[2 * i] as number).some((a) => a < 0))
        throw new GatewayError("VALIDATION_FAILED", "a must not be negative", "INVALID_ARG", 400);
      return {
        body: {
          outputs: [{ name: "Y", data: Array.from({ length: rows }, (_, i) => data[2 * i]! + data[2 * i + 1]!) }],
        },
      };
    },
  } as unknown as GatewayClient;
}

async function runJob(values: number[], rowsPerRequest: number) {
  const requests: number[][] = [];
  const lane: GatewayLane = {
    id: "g",
    client: fakeGateway(requests),
    limiter: new AimdLimiter({ budgetMs: 50, initial: 1, min: 1, max: 1 }),
    inFlight: 0,
    away: false,
  };
  const lanes: RowLanes = {
    acquire: () => {
      // One request at a time, so the requests' order is the rows'.
      if (lane.inFlight >= 1) return undefined;
      lane.inFlight += 1;
      return lane;
    },
    release: () => {
      lane.inFlight -= 1;
    },
    markAway: () => undefined,
  };
  const rows = values.map((a, index) => ({ _row: index, a, b: 10 }));
  const outcomes: ChunkOutcome[] = [];
  const results: Array<Record<string, unknown>> = [];
  const counted = { rows: 0, requests: 0 };
  const files = {
    readRows: async (_sandbox: unknown, [start, end]: [number, number]) => rows.slice(start, end),
    writePart: async (_sandbox: unknown, _part: string, _outputs: unknown, chunk: Array<Record<string, unknown>>) => {
      results.push(...chunk);
    },
  } as unknown as JobFiles;
  const runner = new JobRunner({
    files,
    sandbox: {} as never,
    lanes,
    target: { name: "m" },
    planned,
    outputs: [{ name: "Y", type: "FLOAT" }],
    requestedOutputs: [],
    images: { baseDir: "/", roots: [] },
    logger: silent,
    chunkRows: 100,
    rowsPerRequest,
    stopping: () => false,
    onRowSettled: () => {
      counted.rows += 1;
    },
    onRequestAnswered: () => {
      counted.requests += 1;
    },
    commit: async (outcome) => {
      outcomes.push(outcome);
    },
  });
  expect(await runner.run([], values.length)).toBe(true);
  return { requests, outcomes, results, counted };
}

describe("a job's rows, several a request", () => {
  it("sends rowsPerRequest rows a request and gives each row its own result", async () => {
    const { requests, results, outcomes, counted } = await runJob([1, 2, 3, 4, 5], 2);
    expect(requests).toEqual([[1, 2], [3, 4], [5]]);
    // The cost model charges the job its share of the target's requests: three requests, not five.
    expect(counted).toEqual({ rows: 5, requests: 3 });
    expect(results).toEqual([1, 2, 3, 4, 5].map((a, index) => ({ _row: index, Y: a + 10 })));
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ succeeded: 5, failures: [], servedBy: { g: 5 } });
  });

  it("sends the rows of a joined request that failed one by one, so only the bad row fails, with its own error", async () => {
    const { requests, results, outcomes, counted } = await runJob([1, -2, 3, 4], 2);
    expect(requests).toEqual([[1, -2], [1], [-2], [3, 4]]);
    // Every request the gateway answered counts, the failed joined one too (the target counts it as a failure).
    expect(counted).toEqual({ rows: 4, requests: 4 });
    expect(results).toEqual([
      { _row: 0, Y: 11 },
      { _row: 2, Y: 13 },
      { _row: 3, Y: 14 },
    ]);
    expect(outcomes[0]?.failures).toEqual([{ row: 1, error: "a must not be negative" }]);
  });

  it("sends one row a request when asked for one", async () => {
    const { requests } = await runJob([1, 2, 3], 1);
    expect(requests).toEqual([[1], [2], [3]]);
  });
});
