import { OperonError } from "@operon/protocol/errors";
import { afterEach, describe, expect, it } from "vitest";
import { DecodePool } from "./decode-pool.js";

// The pool runs the built decode thread (dist/frontends/decode/decode-thread.js): `npx tsc -b packages/gateway` first.

/** A JSON array of `count` distinct short strings: cheap in bytes, heavy in heap once parsed. */
function manyStrings(count: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(`"s${i}"`);
  return Buffer.from(`[${parts.join(",")}]`);
}

/** A small JSON body of its own (no shared pool buffer), at least 64 KiB. */
const innocent = (): Buffer => Buffer.from(JSON.stringify({ ok: true, pad: "x".repeat(70_000) }));

const failureOf = (promise: Promise<unknown>): Promise<OperonError> =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: OperonError) => error,
  );

describe("decode pool", () => {
  let pool: DecodePool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it("refuses a body whose parse would not fit the thread's heap, alone; the one queued behind it decodes", async () => {
    // It used to be parsed until the heap ran out, and about one run in five the whole process aborted ("Reached
    // heap limit": Node's grace for stopping a worker is 16 MiB, and JSON.parse does not stop). Now it is refused
    // from its counts before parsing, and the process lives (5 runs of 5 here).
    pool = new DecodePool({ threads: 1, maxHeapMb: 32, maxDecodeMs: 55_000 });
    const heavy = pool.decodeJson(manyStrings(3_000_000), true);
    const behind = pool.decodeJson(innocent(), true);
    const failure = await failureOf(heavy);
    expect(failure.kind).toBe("INVALID_ARG");
    expect(failure.message).toMatch(/too large or too complex to decode within the decoder's 32 MiB of memory/);
    expect(await behind).toMatchObject({ ok: true });
    // The pool serves on.
    expect(await pool.decodeJson(innocent(), true)).toMatchObject({ ok: true });
  }, 60_000);

  it("stops a body that takes longer than the limit, alone", async () => {
    pool = new DecodePool({ threads: 1, maxDecodeMs: 500 });
    const slow = pool.decodeJson(manyStrings(4_000_000), true);
    const behind = pool.decodeJson(innocent(), true);
    const failure = await failureOf(slow);
    expect(failure.kind).toBe("INVALID_ARG");
    expect(failure.message).toMatch(/took longer than 0.5 s to decode/);
    expect(await behind).toMatchObject({ ok: true });
  }, 60_000);

  it("starts a body's time limit once its thread has loaded, not when a slow-starting thread was spawned", async () => {
    // The thread takes 1.5 s to start, three times the limit: the body must still decode (it failed before).
    const threadEntry = new URL("./testing/slow-start-decode-thread.mjs", import.meta.url);
    pool = new DecodePool({ threads: 1, maxDecodeMs: 500, threadEntry });
    expect(await pool.decodeJson(innocent(), true)).toMatchObject({ ok: true });
    // Once ready, the clock runs as before: a slow body is still stopped.
    const failure = await failureOf(pool.decodeJson(manyStrings(4_000_000), true));
    expect(failure.message).toMatch(/took longer than 0.5 s to decode/);
  }, 60_000);

  it("has two threads at least, and hands a body to a free thread rather than queueing it behind a slow one", async () => {
    const sized = new DecodePool();
    expect(sized.threads).toBeGreaterThanOrEqual(2);
    await sized.close();
    pool = new DecodePool({ threads: 2 });
    const order: string[] = [];
    const slow = pool.decodeJson(manyStrings(1_500_000), true).then(() => order.push("slow"));
    const quick = pool.decodeJson(innocent(), true).then(() => order.push("quick"));
    await Promise.all([slow, quick]);
    expect(order).toEqual(["quick", "slow"]);
  }, 60_000);

  it("refuses bodies beyond its queue at once with UNAVAILABLE, naming the queue", async () => {
    pool = new DecodePool({ threads: 1, maxQueuedBodies: 2 });
    const accepted = [
      pool.decodeJson(manyStrings(500_000), true),
      pool.decodeJson(innocent(), true),
      pool.decodeJson(innocent(), true),
    ];
    const failure = await failureOf(pool.decodeJson(innocent(), true));
    expect(failure.kind).toBe("UNAVAILABLE");
    expect(failure.message).toMatch(
      /the request decoder is busy: 2 bodies \(\d+ bytes\) wait for its 1 threads already; retry shortly/,
    );
    await Promise.all(accepted);
  }, 60_000);
});
