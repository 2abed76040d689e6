import type { PrismaClient } from "@operon/db";
import type { Logger } from "@operon/protocol/logger";

/**
 * Writes a running job's throughput as BatchJobSample rows, one per
 * interval: the rows that settled (a result or a failure) and the requests
 * the gateway answered for them (rows joined into one request count one). The Jobs page charts them beside the
 * target's online traffic (job-throughput.ts), and the cost model charges
 * the job its share of the target's requests from them (costs/job-cost.ts).
 *
 * Telemetry, not the checkpoint: rows are counted when they settle, so a
 * crash that drops an uncheckpointed chunk counts those rows again when they
 * rerun (they were computed twice, and cost twice). A write that fails is
 * logged and its counts carried into the next interval; it never fails the
 * job. `stop` writes the last, partial interval; as no interval follows it
 * to carry its counts, that write is tried `finalAttempts` times (3),
 * `retryMs` apart (doubling), before its rows are given up (and logged as
 * lost): a database that blipped as the job ended must not take the job's
 * last seconds off its chart and its cost.
 *
 * Every interval of the run is written, one without rows too: the chart
 * divides a bucket's rows by the time its samples cover (job-throughput.ts),
 * so a job that ran only part of a bucket (one that ends within a sample
 * period, or starts in the middle of a bucket) shows the rate it ran at,
 * and an idle stretch of a running job counts as time at 0 rows/s. A paused
 * or stopped job has no recorder and writes nothing.
 */
export const DEFAULT_THROUGHPUT_SAMPLE_MS = 5_000;
const DEFAULT_FINAL_ATTEMPTS = 3;
const DEFAULT_RETRY_MS = 250;

export class JobThroughputRecorder {
  private rows = 0;
  private requests = 0;
  private intervalStart = Date.now();
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;

  private constructor(
    private readonly prisma: PrismaClient,
    private readonly jobId: string,
    private readonly logger: Logger,
    sampleMs: number,
    private readonly finalAttempts: number,
    private readonly retryMs: number,
  ) {
    this.timer = setInterval(() => void this.flush(), sampleMs);
    this.timer.unref();
  }

  static start(options: {
    prisma: PrismaClient;
    jobId: string;
    logger: Logger;
    sampleMs?: number;
    /** Tries of the last interval's write. Default 3. */
    finalAttempts?: number;
    /** The wait before the last write's second try (ms; doubling after). Default 250. */
    retryMs?: number;
  }): JobThroughputRecorder {
    return new JobThroughputRecorder(
      options.prisma,
      options.jobId,
      options.logger,
      options.sampleMs ?? DEFAULT_THROUGHPUT_SAMPLE_MS,
      Math.max(1, options.finalAttempts ?? DEFAULT_FINAL_ATTEMPTS),
      options.retryMs ?? DEFAULT_RETRY_MS,
    );
  }

  /** One row settled (a result or a failure). */
  rowSettled(): void {
    this.rows += 1;
  }

  /** The gateway answered one of the job's requests: one request, however many rows it carried. */
  requestAnswered(): void {
    this.requests += 1;
  }

  /** Writes the last interval and stops; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return this.writing;
    this.stopped = true;
    clearInterval(this.timer);
    await this.flush(true);
  }

  private flush(final = false): Promise<void> {
    if (this.stopped && !final) return this.writing;
    this.writing = this.writing.then(async () => {
      for (let attempt = 1; ; attempt += 1) {
        const written = await this.write();
        if (written === true || !final) return;
        if (attempt >= this.finalAttempts) {
          this.logger.warn(
            { job: this.jobId, err: written.message, rows: this.rows, requests: this.requests, attempts: attempt },
            "batch job: the last throughput sample was not written; its rows are not charted",
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, this.retryMs * 2 ** (attempt - 1)));
      }
    });
    return this.writing;
  }

  /** Writes the interval up to now: true when written (or nothing to write yet), else the error (the counts stay). */
  private async write(): Promise<true | Error> {
    const now = Date.now();
    const { rows, requests } = this;
    // The sample's key is (job, start): an interval shorter than a millisecond waits for the next.
    if (now <= this.intervalStart) return true;
    const at = new Date(this.intervalStart);
    try {
      await this.prisma.batchJobSample.create({
        data: { jobId: this.jobId, at, intervalMs: now - this.intervalStart, rows, requests },
      });
      this.rows -= rows;
      this.requests -= requests;
      this.intervalStart = now;
      return true;
    } catch (error) {
      this.logger.warn(
        { job: this.jobId, err: (error as Error).message },
        "batch job: a throughput sample was not written; its rows count in the next",
      );
      return error as Error;
    }
  }
}
