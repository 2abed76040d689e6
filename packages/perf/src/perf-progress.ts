/**
 * Progress of a run as runPerf reports it, and its one-line rendering.
 * The CLI writes the line to stderr: rewritten in place with \r on a
 * terminal, one line per window otherwise (logs, pipes, CI).
 */
export interface PerfProgress {
  /** "step" when a step starts, "window" after each measurement window. */
  phase: "step" | "window";
  /** 0-based step index, and the number of steps in the sweep. */
  stepIndex: number;
  stepCount: number;
  load: { concurrency: number } | { requestRate: number };
  /** 1-based window number (0 at step start) and the most windows the step may take. */
  window: number;
  maxWindows: number;
  requests: number;
  errors: number;
  throughputInferPerSec: number;
  avgLatencyUs: number;
  stable: boolean;
}

export function formatProgress(progress: PerfProgress): string {
  const load =
    "concurrency" in progress.load
      ? `concurrency ${progress.load.concurrency}`
      : `request rate ${progress.load.requestRate}/s`;
  const head = `[${progress.stepIndex + 1}/${progress.stepCount}] ${load}`;
  if (progress.phase === "step") return `${head}: measuring...`;
  const parts = [
    `window ${progress.window}/${progress.maxWindows}`,
    `${progress.throughputInferPerSec.toFixed(1)} infer/sec`,
    `avg latency ${Math.round(progress.avgLatencyUs)} usec`,
    `${progress.requests} requests`,
  ];
  if (progress.errors > 0) parts.push(`${progress.errors} errors`);
  if (progress.stable) parts.push("stable");
  return `${head}: ${parts.join(", ")}`;
}

export interface ProgressWriter {
  update(progress: PerfProgress): void;
  /** Ends an in-place line so that later output starts on a fresh line; idempotent. */
  finish(): void;
}

/** Writes progress lines to a stream (stderr): in place on a TTY, one per window otherwise. */
export function progressWriter(stream: NodeJS.WritableStream & { isTTY?: boolean }): ProgressWriter {
  const tty = stream.isTTY === true;
  let open = false;
  return {
    update(progress) {
      const line = formatProgress(progress);
      if (tty) {
        // \x1b[K clears what a longer previous line left behind.
        stream.write(`\r${line}\x1b[K`);
        open = true;
      } else if (progress.phase === "window") {
        stream.write(`${line}\n`);
      }
    },
    finish() {
      if (open) stream.write("\n");
      open = false;
    },
  };
}
