import { Worker } from "node:worker_threads";
import { AppError } from "../../app-error.js";
import type { CompileProblem } from "./custom-step-compile.js";
import type { DeclaredStepSignature } from "./custom-step-signature.js";

/**
 * Runs the type check of uploaded custom steps (custom-step-compile.ts) off
 * the control plane's event loop. TypeScript's check is synchronous and takes
 * seconds (it reads Node's declarations every time, and an upload can be
 * large): on the event loop it stalled every other request of the control
 * plane meanwhile. Each check gets its own worker thread, started for it and
 * ended after it, so nothing stays resident between the rare uploads; at
 * most `maxConcurrent` run at once (the rest wait in order), each under a
 * heap cap and a time limit. A check over either limit is the upload's
 * problem (VALIDATION_FAILED, saying which limit); a thread that fails
 * otherwise is the server's (INTERNAL).
 */
export interface CustomStepCheckerOptions {
  /** Checks running at once; more wait. Default 2. */
  maxConcurrent?: number;
  /** A check still running after this long is stopped. Default 60 s. */
  timeoutMs?: number;
  /** The thread's V8 old-generation cap. Default 1024 MiB (a plain check of model.ts uses about 150). */
  maxHeapMb?: number;
}

export const DEFAULT_CHECKER_OPTIONS: Required<CustomStepCheckerOptions> = {
  maxConcurrent: 2,
  timeoutMs: 60_000,
  maxHeapMb: 1024,
};

/** The message the checker's thread receives (as workerData): the files by path, and the entry to check. */
export interface CompileTask {
  files: Array<[string, string]>;
  entry: string;
}

/** The thread's one answer. */
export type CompileReply =
  | { ok: true; problems: CompileProblem[]; signature: DeclaredStepSignature | null }
  | { ok: false; message: string };

/** A check's answer: the problems (none when the entry compiles) and what it declares about its tensors. */
export interface CheckResult {
  problems: CompileProblem[];
  signature: DeclaredStepSignature | null;
}

export class CustomStepChecker {
  private readonly options: Required<CustomStepCheckerOptions>;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(options: CustomStepCheckerOptions = {}) {
    this.options = { ...DEFAULT_CHECKER_OPTIONS, ...options };
    if (!Number.isInteger(this.options.maxConcurrent) || this.options.maxConcurrent < 1) {
      throw new Error(`maxConcurrent must be a positive integer, got ${this.options.maxConcurrent}`);
    }
  }

  /** Problems of `files` (path -> text), empty when `entry` compiles, and its declared signature; the event loop stays free meanwhile. */
  async check(files: ReadonlyMap<string, string>, entry = "model.ts"): Promise<CheckResult> {
    await this.slot();
    try {
      return await this.runThread({ files: [...files], entry });
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }

  /** Checks running now (tests and metrics). */
  get inFlight(): number {
    return this.running;
  }

  private async slot(): Promise<void> {
    if (this.running >= this.options.maxConcurrent) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running += 1;
  }

  private runThread(task: CompileTask): Promise<CheckResult> {
    const { timeoutMs, maxHeapMb } = this.options;
    return new Promise((resolve, reject) => {
      const worker = new Worker(compileThreadEntry(), {
        workerData: task,
        resourceLimits: { maxOldGenerationSizeMb: maxHeapMb },
      });
      // A check in progress does not hold the control plane open at shutdown.
      worker.unref();
      let settled = false;
      const settle = (finish: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        finish();
        void worker.terminate();
      };
      const timer = setTimeout(
        () =>
          settle(() =>
            reject(
              new AppError(
                "VALIDATION_FAILED",
                `the type check of the custom step took longer than ${timeoutMs / 1000} s, the limit per upload; split or simplify model.ts`,
              ),
            ),
          ),
        timeoutMs,
      );
      timer.unref();
      worker.on("message", (reply: CompileReply) =>
        settle(() =>
          reply.ok
            ? resolve({ problems: reply.problems, signature: reply.signature })
            : reject(new AppError("INTERNAL", `the type check of the custom step failed: ${reply.message}`)),
        ),
      );
      worker.on("error", (error: Error & { code?: string }) =>
        settle(() =>
          reject(
            error.code === "ERR_WORKER_OUT_OF_MEMORY"
              ? new AppError(
                  "VALIDATION_FAILED",
                  `the type check of the custom step needed more than ${maxHeapMb} MiB of memory, the limit per upload; split or simplify model.ts`,
                  { cause: error },
                )
              : new AppError("INTERNAL", `the type check of the custom step failed: ${error.message}`, {
                  cause: error,
                }),
          ),
        ),
      );
      worker.on("exit", (code) =>
        settle(() =>
          reject(new AppError("INTERNAL", `the type check of the custom step stopped (thread exit code ${code})`)),
        ),
      );
    });
  }
}

/** The thread's compiled file: beside this one in dist; from the sources (tests), the built copy in dist. */
function compileThreadEntry(): URL {
  const here = import.meta.url;
  return here.endsWith(".ts")
    ? new URL("../../../dist/services/models/custom-step-compile-thread.js", here)
    : new URL("./custom-step-compile-thread.js", here);
}
