import { createRequire } from "node:module";
import { afterEach, describe, expect, it, vi } from "vitest";

/**
 * grpc-js's StreamDecoder (frames gRPC messages out of HTTP/2 DATA chunks) as
 * patched by packages/gateway/patches (applied by patch-package at install):
 * a message's buffer is allocated once its length prefix is read and filled
 * as chunks arrive, so a 64 MiB message is never joined by one Buffer.concat
 * on the event loop (bench section 5's gRPC stall).
 */

interface StreamDecoder {
  write(data: Buffer): Buffer[];
}
const require = createRequire(import.meta.url);
const { StreamDecoder } = require("@grpc/grpc-js/build/src/stream-decoder.js") as {
  StreamDecoder: new (maxReadMessageLength: number) => StreamDecoder;
};

/** A gRPC length-prefixed message: compressed flag 0, big-endian length, the bytes. */
function framed(payload: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(payload.length, 1);
  return Buffer.concat([prefix, payload]);
}

function pieces(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe("grpc-js StreamDecoder as patched", () => {
  it("gives every message byte for byte whatever the chunk boundaries, empty messages included", () => {
    const payloads = [
      Buffer.from("hello"),
      Buffer.alloc(0),
      Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]),
      Buffer.alloc(300, 7),
    ];
    const stream = Buffer.concat(payloads.map(framed));
    for (const size of [1, 2, 3, 5, 6, 7, 64, stream.length]) {
      const decoder = new StreamDecoder(-1);
      const messages = pieces(stream, size).flatMap((chunk) => decoder.write(chunk));
      expect(messages.map((message) => message.subarray(5).toString("hex"))).toEqual(
        payloads.map((payload) => payload.toString("hex")),
      );
      // The 5-byte prefix stays on each message, as grpc-js's decompression step expects.
      expect(messages.map((message) => message.readUInt32BE(1))).toEqual(payloads.map((payload) => payload.length));
    }
  });

  it("fills a 64 MiB message as its chunks arrive: no Buffer.concat of the whole message", () => {
    const payload = Buffer.allocUnsafe(64 * 1024 * 1024);
    for (let at = 0; at < payload.length; at += 4096) payload.writeUInt32LE(at, at);
    const stream = framed(payload);
    const decoder = new StreamDecoder(128 * 1024 * 1024);
    const concat = vi.spyOn(Buffer, "concat");
    const messages: Buffer[] = [];
    for (const chunk of pieces(stream, 16 * 1024)) messages.push(...decoder.write(chunk));
    expect(concat).not.toHaveBeenCalled();
    expect(messages).toHaveLength(1);
    expect(messages[0]!.length).toBe(payload.length + 5);
    expect(messages[0]!.subarray(5).equals(payload)).toBe(true);
  });

  it("still refuses a message longer than the limit before allocating it", () => {
    const decoder = new StreamDecoder(1024);
    const prefix = framed(Buffer.alloc(2048)).subarray(0, 5);
    const allocUnsafe = vi.spyOn(Buffer, "allocUnsafe");
    expect(() => decoder.write(prefix)).toThrow(/larger than max \(2048 vs 1024\)/);
    expect(allocUnsafe).not.toHaveBeenCalled();
  });
});
