import type { PrismaClient } from "@operon/db";
import type { Logger } from "@operon/protocol/logger";
import { describe, expect, it } from "vitest";
import { JobThroughputRecorder } from "./job-throughput-recorder.js";

interface Sample {
  jobId: string;
  at: Date;
  intervalMs: number;
  rows: number;
  requests: number;
}

/** A database whose first `failures` sample writes fail; the written samples. */
function flakyDatabase(failures: number) {
  const written: Sample[] = [];
  let left = failures;
  const prisma = {
    batchJobSample: {
      create: async ({ data }: { data: Sample }) => {
        if (left > 0) {
          left -= 1;
          throw new Error("connection reset");
        }
        written.push(data);
        return data;
      },
    },
  } as unknown as PrismaClient;
  return { prisma, written };
}

const silent = { warn: () => {}, info: () => {}, error: () => {}, debug: () => {} } as unknown as Logger;

async function recordAndStop(failures: number, finalAttempts?: number) {
  const { prisma, written } = flakyDatabase(failures);
  const recorder = JobThroughputRecorder.start({
    prisma,
    jobId: "job-1",
    logger: silent,
    sampleMs: 60_000,
    retryMs: 1,
    ...(finalAttempts !== undefined ? { finalAttempts } : {}),
  });
  for (let i = 0; i < 7; i += 1) recorder.rowSettled();
  for (let i = 0; i < 4; i += 1) recorder.requestAnswered();
  // The interval must be at least a millisecond long to be written.
  await new Promise((resolve) => setTimeout(resolve, 5));
  await recorder.stop();
  return written;
}

describe("a job's throughput recorder", () => {
  it("writes the last interval when the job stops", async () => {
    expect(await recordAndStop(0)).toMatchObject([{ jobId: "job-1", rows: 7, requests: 4 }]);
  });

  it("tries the last interval's write again when it fails: no interval follows it to carry its rows", async () => {
    const written = await recordAndStop(2);
    expect(written).toMatchObject([{ jobId: "job-1", rows: 7, requests: 4 }]);
    expect(written[0]?.intervalMs).toBeGreaterThan(0);
  });

  it("gives the last interval up after finalAttempts tries, and stop still returns", async () => {
    expect(await recordAndStop(5, 3)).toEqual([]);
    expect(await recordAndStop(2, 3)).toHaveLength(1);
  });
});
