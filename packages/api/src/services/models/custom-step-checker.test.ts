import { describe, expect, it } from "vitest";
import { AppError } from "../../app-error.js";
import { CustomStepChecker } from "./custom-step-checker.js";
import { compileCustomStep, formatProblem } from "./custom-step-compile.js";

/**
 * The type check in its worker thread (run from the built dist, as the
 * control plane runs it): the same problems as the check in-process, the
 * event loop free meanwhile, and the limits answered as the upload's
 * problem.
 */
const BROKEN = new Map([
  [
    "model.ts",
    "export default class Broken {\n  execute(requests: number[]) {\n    const n: string = requests.length;\n  }\n}\n",
  ],
]);

describe("CustomStepChecker", () => {
  it("finds in a thread the problems the in-process check finds", async () => {
    const { problems, signature } = await new CustomStepChecker().check(BROKEN);
    expect(signature).toBeNull();
    expect(problems.map(formatProblem)).toEqual(compileCustomStep(BROKEN).map(formatProblem));
    expect(problems.map(formatProblem)).toEqual(["model.ts:3:11 Type 'number' is not assignable to type 'string'."]);
  });

  it("leaves the event loop free while it checks", async () => {
    let ticks = 0;
    let longestGapMs = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      longestGapMs = Math.max(longestGapMs, now - last);
      last = now;
      ticks += 1;
    }, 10);
    const started = performance.now();
    try {
      await new CustomStepChecker().check(BROKEN);
    } finally {
      clearInterval(timer);
    }
    const tookMs = performance.now() - started;
    // The check reads Node's declarations: hundreds of ms at least, during which the timer kept firing.
    expect(tookMs).toBeGreaterThan(200);
    expect(ticks).toBeGreaterThan(tookMs / 10 / 4);
    // On the event loop the longest gap would be the whole check; a busy host still stalls the timer now and then.
    expect(longestGapMs).toBeLessThan(tookMs / 3);
  });

  it("stops a check over its time limit, as the upload's problem", async () => {
    const error = await new CustomStepChecker({ timeoutMs: 50 }).check(BROKEN).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: "VALIDATION_FAILED" });
    expect((error as Error).message).toMatch(/took longer than 0\.05 s, the limit per upload/);
  });

  it("stops a check over its memory cap, as the upload's problem", async () => {
    const error = await new CustomStepChecker({ maxHeapMb: 8 }).check(BROKEN).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "VALIDATION_FAILED" });
    expect((error as Error).message).toMatch(/needed more than 8 MiB of memory/);
  });

  it("runs at most maxConcurrent checks at once; the others wait their turn", async () => {
    const checker = new CustomStepChecker({ maxConcurrent: 1 });
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, checker.inFlight)), 5);
    try {
      const all = await Promise.all([checker.check(BROKEN), checker.check(BROKEN)]);
      expect(all.map(({ problems }) => problems.length)).toEqual([1, 1]);
    } finally {
      clearInterval(watch);
    }
    expect(most).toBe(1);
    expect(checker.inFlight).toBe(0);
  });

  it("refuses a concurrency that is not a positive integer", () => {
    expect(() => new CustomStepChecker({ maxConcurrent: 0 })).toThrow(
      /maxConcurrent must be a positive integer, got 0/,
    );
  });
});
