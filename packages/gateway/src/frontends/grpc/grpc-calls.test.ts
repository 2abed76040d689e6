import { EventEmitter } from "node:events";
import { isOperonError } from "@operon/protocol/errors";
import { describe, expect, it } from "vitest";
import { watchCancel } from "./grpc-calls.js";

/** A unary call as grpc-js hands it to a handler: `cancelled`, and a 'cancelled' event when its stream closes. */
function fakeCall(cancelled = false): EventEmitter & { cancelled: boolean } {
  return Object.assign(new EventEmitter(), { cancelled });
}

describe("watchCancel", () => {
  it("aborts the request's signal with CANCELLED when the client cancels before the answer", () => {
    const call = fakeCall();
    const { signal } = watchCancel(call);
    let heard = 0;
    signal.addEventListener("abort", () => (heard += 1));
    call.emit("cancelled");
    expect(signal.aborted).toBe(true);
    expect(heard).toBe(1);
    expect(isOperonError(signal.reason) && signal.reason.kind).toBe("CANCELLED");
  });

  it("leaves the signal alone when the stream closes after the call was answered (grpc-js emits 'cancelled' then too)", () => {
    const call = fakeCall();
    const { signal, answered } = watchCancel(call);
    signal.addEventListener("abort", () => {
      throw new Error("an answered call's request must not be cancelled");
    });
    answered();
    call.emit("cancelled");
    expect(signal.aborted).toBe(false);
  });

  it("starts aborted for a call the client cancelled before the handler ran", () => {
    const { signal } = watchCancel(fakeCall(true));
    expect(signal.aborted).toBe(true);
    expect(isOperonError(signal.reason) && signal.reason.kind).toBe("CANCELLED");
  });
});
