import { describe, expect, it } from "vitest";
import { ExclusiveSlot } from "./exclusive-slot.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("ExclusiveSlot", () => {
  it("runs one job at a time, first come first served, passing results and errors through", async () => {
    const slot = new ExclusiveSlot();
    const order: string[] = [];
    const gate = deferred();
    const first = slot.run("a", async () => {
      order.push("a start");
      await gate.promise;
      order.push("a end");
      return 1;
    });
    const second = slot.run("b", async () => {
      order.push("b");
      throw new Error("b failed");
    });
    const third = slot.run("c", async () => {
      order.push("c");
      return 3;
    });
    await Promise.resolve();
    expect(slot.current).toBe("a");
    expect(slot.waiting).toBe(2);
    gate.resolve();
    expect(await first).toBe(1);
    await expect(second).rejects.toThrow("b failed");
    expect(await third).toBe(3);
    expect(order).toEqual(["a start", "a end", "b", "c"]);
    expect(slot.current).toBeUndefined();
    expect(slot.waiting).toBe(0);
  });

  it("skips a waiter whose signal aborts before its turn", async () => {
    const slot = new ExclusiveSlot();
    const gate = deferred();
    const first = slot.run("a", () => gate.promise);
    const controller = new AbortController();
    let called = false;
    const skipped = slot.run(
      "b",
      async () => {
        called = true;
      },
      controller.signal,
    );
    controller.abort(new Error("cancelled"));
    gate.resolve();
    await first;
    await expect(skipped).rejects.toThrow("cancelled");
    expect(called).toBe(false);
    expect(await slot.run("c", async () => "free again")).toBe("free again");
    await expect(slot.run("d", async () => 1, controller.signal)).rejects.toThrow("cancelled");
  });

  it("rejects a waiter at once when its signal aborts, without waiting for the work ahead", async () => {
    const slot = new ExclusiveSlot();
    const gate = deferred();
    const first = slot.run("a", () => gate.promise);
    const controller = new AbortController();
    const waiter = slot.run("b", async () => "ran", controller.signal);
    await new Promise((resolve) => setImmediate(resolve)); // "a" has taken the slot
    expect(slot.waiting).toBe(1);
    controller.abort(new Error("cancelled while waiting"));
    await expect(waiter).rejects.toThrow("cancelled while waiting");
    expect(slot.current).toBe("a");
    expect(slot.waiting).toBe(0);
    gate.resolve();
    await first;
    expect(await slot.run("c", async () => "next")).toBe("next");
  });
});
