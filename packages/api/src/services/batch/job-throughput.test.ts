import { describe, expect, it } from "vitest";
import {
  emptyBucketTotals,
  jobBucketSecs,
  runWindowOf,
  type ThroughputBucketTotals,
  throughputSeries,
} from "./job-throughput.js";

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
  it("ends a job that is not running with the bucket of its last rows, not after the drain and the result's merge", () => {
    const done = { state: "DONE", startedAt: at(0), finishedAt: at(9.4), updatedAt: at(9.4) };
    expect(runWindowOf(done, at(60), at(7.2))).toEqual({ from: at(-10), to: at(7.201) });
    // Never later than the job's end, and at least a second of run.
    expect(runWindowOf(done, at(60), at(12))).toEqual({ from: at(-10), to: at(9.4) });
    expect(runWindowOf(done, at(60), at(0.2))).toEqual({ from: at(-10), to: at(1) });
    // A running job's chart runs to now: its idle time is time at 0 rows/s.
    expect(runWindowOf({ ...done, state: "RUNNING", finishedAt: null }, at(30), at(7.2))).toEqual({
      from: at(-10),
      to: at(30),
    });
  });
});

describe("a fast job's chart right after it ended", () => {
  // The job of the job-throughput-and-cost browser spec with 4 rows a request: a 2 s probe (no rows), 3,000 rows
  // in about 5 s, then the drain before the recorder's last sample (no rows) and the merge of the result before it
  // is marked done. Samples every second, from 0.4 s after the start (the snapshot comes first): they straddle the
  // 1 s buckets, which start 10 s before the job.
  const samples = [
    { at: 0.4, secs: 1, rows: 0 },
    { at: 1.4, secs: 1, rows: 0 },
    { at: 2.4, secs: 1, rows: 600 },
    { at: 3.4, secs: 1, rows: 620 },
    { at: 4.4, secs: 1, rows: 640 },
    { at: 5.4, secs: 1, rows: 610 },
    { at: 6.4, secs: 0.86, rows: 530 },
    { at: 7.26, secs: 0.3, rows: 0 },
  ];
  const job = { state: "DONE", startedAt: at(0), finishedAt: at(8.66), updatedAt: at(8.66) };

  /** The chart's series as jobs.throughput gives it: samples in the bucket their start falls in (the SQL's rule). */
  function chart(window: { from: Date; to: Date }) {
    const inWindow = samples.filter((sample) => at(sample.at) >= window.from && at(sample.at) < window.to);
    const bucketSecs = jobBucketSecs(window.from, window.to, Math.max(...inWindow.map((s) => Math.ceil(s.secs))));
    const totals = new Map<number, ThroughputBucketTotals>();
    for (const sample of inWindow) {
      const bucket = Math.floor((at(sample.at).getTime() - window.from.getTime()) / (bucketSecs * 1000));
      const entry = totals.get(bucket) ?? emptyBucketTotals(bucket);
      entry.jobRows += sample.rows;
      entry.jobCoveredSecs += sample.secs;
      totals.set(bucket, entry);
    }
    return throughputSeries(window.from, window.to, bucketSecs, [...totals.values()]).map((p) => p.jobRowsPerSec);
  }

  it("ends on the job's last rows/s, not on 0", () => {
    const lastRows = samples.filter((sample) => sample.rows > 0).at(-1)!;
    const window = runWindowOf(job, at(60), at(lastRows.at))!;
    const rates = chart(window);
    expect(rates.at(-1)).toBeCloseTo(530 / 0.86);
    expect(Math.max(...rates)).toBeGreaterThan(600);
  });

  it("read 0 rows/s as its latest point when the window ran to the job's end (the tail alone in a bucket)", () => {
    expect(chart(runWindowOf(job, at(60))!).at(-1)).toBe(0);
  });

  it("would read 0 too if the window ended where the last rows settled: that sample's end is in the next bucket", () => {
    const lastRows = samples.filter((sample) => sample.rows > 0).at(-1)!;
    const settled = at(lastRows.at + lastRows.secs);
    expect(chart({ from: at(-10), to: settled }).at(-1)).toBe(0);
  });
});
