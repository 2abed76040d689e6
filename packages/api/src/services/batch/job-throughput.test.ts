import { describe, expect, it } from "vitest";
import { jobBucketSecs, runWindowOf, throughputSeries } from "./job-throughput.js";

const T0 = new Date(Date.UTC(2026, 11, 5, 12, 0, 0));
const at = (secs: number) => new Date(T0.getTime() + secs * 1000);

describe("throughputSeries", () => {
  it("gives the job's rows/s and the target's requests/s less every job's", () => {
    const points = throughputSeries(T0, at(30), 10, [
      { bucket: 0, jobRows: 500, jobCoveredSecs: 10, allJobsRequests: 500, targetRequests: 800, targetCoveredSecs: 10 },
      { bucket: 1, jobRows: 0, jobCoveredSecs: 10, allJobsRequests: 200, targetRequests: 250, targetCoveredSecs: 10 },
    ]);
    expect(points.map((point) => [point.jobRowsPerSec, point.onlineRequestsPerSec])).toEqual([
      [50, 30], // 800 − 500 over 10 s
      [0, 5], // another job's 200 are not online either
      [0, null], // not sampled: a gap, not a zero
    ]);
  });

  it("never shows online traffic below 0, and divides a last partial bucket by the seconds sampled", () => {
    const points = throughputSeries(T0, at(15), 10, [
      { bucket: 1, jobRows: 100, jobCoveredSecs: 5, allJobsRequests: 100, targetRequests: 90, targetCoveredSecs: 5 },
    ]);
    expect(points[1]).toEqual({ at: at(10), jobRowsPerSec: 20, onlineRequestsPerSec: 0 });
  });

  it("gives a job that ran within one sample period its rows over the seconds it ran, not over the bucket", () => {
    // 3,000 rows in one 3 s sample (the job ended before the recorder's first interval did); its 3 s round up
    // to a 5 s bucket. Over the bucket it would read 600 rows/s, 60 % of what it ran at.
    const points = throughputSeries(T0, at(15), 5, [
      { bucket: 2, jobRows: 3000, jobCoveredSecs: 3, allJobsRequests: 750, targetRequests: 900, targetCoveredSecs: 5 },
    ]);
    expect(points.map((point) => point.jobRowsPerSec)).toEqual([0, 0, 1000]);
    expect(points[2]?.onlineRequestsPerSec).toBe(30);
  });
});

describe("jobBucketSecs", () => {
  it("is never shorter than the longest sample, and round", () => {
    expect(jobBucketSecs(T0, at(60), 1)).toBe(1);
    expect(jobBucketSecs(T0, at(60), 15)).toBe(15);
    expect(jobBucketSecs(T0, at(60), 7)).toBe(15);
    expect(jobBucketSecs(T0, at(86_400), 15)).toBe(900);
  });
});

describe("runWindowOf", () => {
  it("runs from a tenth of the run before the start to the end, now while running", () => {
    const job = { state: "DONE", startedAt: at(0), finishedAt: at(200), updatedAt: at(300) };
    expect(runWindowOf(job, at(400))).toEqual({ from: at(-20), to: at(200) });
    expect(runWindowOf({ ...job, state: "RUNNING", finishedAt: null }, at(50))).toEqual({ from: at(-10), to: at(50) });
    expect(runWindowOf({ ...job, state: "PAUSED", finishedAt: null }, at(400))).toEqual({
      from: at(-30),
      to: at(300),
    });
    expect(runWindowOf({ ...job, startedAt: null }, at(400))).toBeNull();
  });
});
