import { EventEmitter } from "node:events";
import { isOperonError } from "@operon/protocol/errors";
import { describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { OperonError } from "@operon/protocol/errors";
import { requestIdMetadata, unary, watchCancel } from "./grpc-calls.js";

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

describe("unary", () => {
  /** Runs a unary handler the way grpc-js does; resolves with what its callback was given. */
  function call(handler: grpc.handleUnaryCall<string, string>, requestId = "rid-1") {
    const metadata = requestIdMetadata(requestId);
    const fake = { request: "in", metadata, getPath: () => "/test/Method", cancelled: false } as never;
    return new Promise<{ error: Partial<grpc.StatusObject> | null; value?: string; trailer?: grpc.Metadata }>(
      (resolve) =>
        handler(fake, (error, value, trailer) =>
          resolve({ error: error as never, value: value ?? undefined, trailer }),
        ),
    );
  }

  it("answers a synchronous value at once, with the call's x-request-id as trailing metadata", async () => {
    let answeredAt: "during the handler" | "later" | undefined;
    let inHandler = true;
    const handler = unary<string, string>(undefined, (request) => `sync ${request}`);
    const done = call(handler).then((result) => result);
    handler({ request: "x", metadata: requestIdMetadata("r"), getPath: () => "/t", cancelled: false } as never, () => {
      answeredAt = inHandler ? "during the handler" : "later";
    });
    inHandler = false;
    expect(answeredAt).toBe("during the handler");
    const result = await done;
    expect(result.error).toBeNull();
    expect(result.value).toBe("sync in");
    expect(result.trailer?.get("x-request-id")).toEqual(["rid-1"]);
    // On the wire as grpc-js writes metadata it checked itself.
    const checked = new grpc.Metadata();
    checked.set("x-request-id", "rid-1");
    expect(result.trailer?.toHttp2Headers()).toEqual(checked.toHttp2Headers());
  });

  it("answers an async value, and turns a thrown or rejected error into its status, keeping the request id", async () => {
    expect((await call(unary(undefined, async (request: string) => `async ${request}`))).value).toBe("async in");
    const thrown = await call(
      unary<string, string>(undefined, () => {
        throw new OperonError("NOT_FOUND", "no such model");
      }),
    );
    expect(thrown.error).toMatchObject({ code: 5, details: "no such model" });
    expect(thrown.error?.metadata?.get("x-request-id")).toEqual(["rid-1"]);
    const rejected = await call(
      unary<string, string>(undefined, async () => {
        throw new OperonError("INVALID_ARG", "bad input");
      }),
    );
    expect(rejected.error).toMatchObject({ code: 3, details: "bad input" });
  });
});
