import { describe, expect, it } from "vitest";
import { Cancellation } from "./cancellation.js";

describe("Cancellation", () => {
  it("starts not aborted, without a reason", () => {
    const cancellation = new Cancellation();
    expect(cancellation.aborted).toBe(false);
    expect(cancellation.reason).toBeUndefined();
  });

  it("fires every listener once, in the order added, with the reason set first", () => {
    const cancellation = new Cancellation();
    const calls: string[] = [];
    const reason = new Error("client left");
    for (const name of ["a", "b", "c"])
      cancellation.addEventListener("abort", () =>
        calls.push(`${name}:${String(cancellation.aborted)}:${cancellation.reason === reason}`),
      );
    cancellation.abort(reason);
    cancellation.abort(new Error("second"));
    expect(calls).toEqual(["a:true:true", "b:true:true", "c:true:true"]);
    expect(cancellation.reason).toBe(reason);
  });

  it("does not call removed listeners, the first or a later one", () => {
    const cancellation = new Cancellation();
    const calls: string[] = [];
    const first = () => calls.push("first");
    const second = () => calls.push("second");
    const third = () => calls.push("third");
    cancellation.addEventListener("abort", first);
    cancellation.addEventListener("abort", second);
    cancellation.addEventListener("abort", third);
    cancellation.removeEventListener("abort", first);
    cancellation.removeEventListener("abort", third);
    cancellation.addEventListener("abort", first);
    cancellation.abort("gone");
    expect(calls).toEqual(["second", "first"]);
  });

  it("ignores listeners added after the abort, as AbortSignal does", () => {
    const cancellation = new Cancellation();
    cancellation.abort("gone");
    let called = false;
    cancellation.addEventListener("abort", () => (called = true));
    expect(called).toBe(false);
    expect(cancellation.aborted).toBe(true);
  });

  it("removing a listener that was never added changes nothing", () => {
    const cancellation = new Cancellation();
    let called = 0;
    cancellation.addEventListener("abort", () => (called += 1));
    cancellation.removeEventListener("abort", () => {});
    cancellation.abort("gone");
    expect(called).toBe(1);
  });
});
