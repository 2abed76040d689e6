import { describe, expect, it } from "vitest";
import { OperonError } from "./errors.js";
import type { Tensor } from "./tensor.js";
import { type DecodedFrame, FrameDecoder, encodeFrame, writeFrame } from "./worker-frame-codec.js";
import type { WorkerMessage } from "./worker-wire.js";

function tensor(name: string, datatype: Tensor["datatype"], shape: number[], data: Buffer): Tensor {
  return { name, datatype, shape, data };
}

function join(pieces: Buffer[]): Buffer {
  return Buffer.concat(pieces);
}

const execute: WorkerMessage = { type: "execute", requestId: 7, outputNames: ["OUT"] };
const inputs = [
  tensor("A", "FP32", [2, 3], Buffer.from(new Float32Array([1, 2, 3, 4, 5, 6]).buffer)),
  tensor("B", "INT8", [3], Buffer.from([1, 255, 3])),
  tensor("C", "BYTES", [0], Buffer.alloc(0)),
  tensor("D", "UINT16", [1], Buffer.from([9, 8])),
];

function expectSameFrame(frame: DecodedFrame | undefined, header: WorkerMessage, tensors: Tensor[]): void {
  expect(frame).toBeDefined();
  expect(frame!.header).toEqual(header);
  expect(frame!.tensors.map((t) => ({ ...t, data: Buffer.from(t.data) }))).toEqual(tensors);
}

describe("worker wire frames", () => {
  it("lays out [frame length][header length][header JSON][tensor bytes]", () => {
    const pieces = encodeFrame(execute, inputs);
    // Tensor data is passed through, not copied (the empty tensor is skipped).
    expect(pieces[1]).toBe(inputs[0]!.data);
    expect(pieces).toHaveLength(4);
    const bytes = join(pieces);
    const headerLength = bytes.readUInt32LE(4);
    expect(bytes.readUInt32LE(0)).toBe(bytes.length - 4);
    expect((8 + headerLength) % 8).toBe(0);
    const header = JSON.parse(bytes.toString("utf8", 8, 8 + headerLength));
    expect(header.type).toBe("execute");
    expect(header.tensors).toEqual([
      { name: "A", datatype: "FP32", shape: [2, 3], byteLength: 24 },
      { name: "B", datatype: "INT8", shape: [3], byteLength: 3 },
      { name: "C", datatype: "BYTES", shape: [0], byteLength: 0 },
      { name: "D", datatype: "UINT16", shape: [1], byteLength: 2 },
    ]);
    expect(bytes.subarray(8 + headerLength, 8 + headerLength + 24)).toEqual(inputs[0]!.data);
  });

  it("decodes a frame split at every byte boundary", () => {
    const bytes = join(encodeFrame(execute, inputs));
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      const decoder = new FrameDecoder();
      const first = decoder.push(bytes.subarray(0, cut));
      const second = decoder.push(bytes.subarray(cut));
      expect(first.length + second.length).toBe(1);
      expectSameFrame(first[0] ?? second[0], execute, inputs);
      expect(decoder.bufferedBytes).toBe(0);
    }
  });

  it("decodes a stream fed one byte at a time", () => {
    const bytes = join([...encodeFrame(execute, inputs), ...encodeFrame({ type: "shutdown" })]);
    const decoder = new FrameDecoder();
    const frames: DecodedFrame[] = [];
    for (let i = 0; i < bytes.length; i += 1) frames.push(...decoder.push(bytes.subarray(i, i + 1)));
    expect(frames).toHaveLength(2);
    expectSameFrame(frames[0], execute, inputs);
    expectSameFrame(frames[1], { type: "shutdown" }, []);
  });

  it("decodes many frames from one chunk, and a frame split across three chunks", () => {
    const messages: WorkerMessage[] = [];
    for (let i = 1; i <= 100; i += 1)
      messages.push({
        type: "result",
        requestId: i,
        timing: { computeInputNs: i, computeInferNs: 2 * i, computeOutputNs: 3 },
      });
    const out = tensor("OUT", "INT32", [2], Buffer.from(new Int32Array([5, -5]).buffer));
    const bytes = join(messages.flatMap((message) => encodeFrame(message, [out])));
    const frames = new FrameDecoder().push(bytes);
    expect(frames.map((frame) => frame.header)).toEqual(messages);
    for (const frame of frames) expect(frame.tensors[0]!.data).toEqual(out.data);

    const single = join(encodeFrame(execute, inputs));
    const decoder = new FrameDecoder();
    // Frame boundaries inside chunks: tail of one frame + head of the next.
    const two = Buffer.concat([single, single]);
    const a = decoder.push(two.subarray(0, 5));
    const b = decoder.push(two.subarray(5, single.length + 3));
    const c = decoder.push(two.subarray(single.length + 3));
    expect([a.length, b.length, c.length]).toEqual([0, 1, 1]);
  });

  it("decodes a large frame delivered in 64 KiB chunks with one join", () => {
    const big = Buffer.allocUnsafe(602_112);
    for (let i = 0; i < big.length; i += 1) big[i] = (i * 31) & 0xff;
    const header: WorkerMessage = { type: "execute", requestId: 1 };
    const bytes = join(encodeFrame(header, [tensor("x", "FP32", [1, 3, 224, 224], big)]));
    const decoder = new FrameDecoder();
    const frames: DecodedFrame[] = [];
    for (let offset = 0; offset < bytes.length; offset += 65_536)
      frames.push(...decoder.push(bytes.subarray(offset, offset + 65_536)));
    expect(frames).toHaveLength(1);
    const data = frames[0]!.tensors[0]!.data;
    expect(data.equals(big)).toBe(true);
    // The joined frame is a fresh allocation and the header is padded: the tensor is 8-byte aligned.
    expect(data.byteOffset % 8).toBe(0);
  });

  it("decodes a 64 MiB frame in linear time", () => {
    const big = Buffer.alloc(64 * 1024 * 1024, 7);
    const bytes = encodeFrame({ type: "execute", requestId: 2 }, [tensor("x", "UINT8", [big.length], big)]);
    const stream = Buffer.concat(bytes);
    const decoder = new FrameDecoder();
    const started = performance.now();
    let frames: DecodedFrame[] = [];
    for (let offset = 0; offset < stream.length; offset += 65_536)
      frames = frames.concat(decoder.push(stream.subarray(offset, offset + 65_536)));
    const elapsed = performance.now() - started;
    expect(frames).toHaveLength(1);
    expect(frames[0]!.tensors[0]!.data.length).toBe(big.length);
    expect(elapsed).toBeLessThan(2_000);
  });

  it("writeFrame corks the sink and writes the pieces in order", () => {
    const calls: string[] = [];
    const written: Buffer[] = [];
    writeFrame(
      {
        cork: () => calls.push("cork"),
        uncork: () => calls.push("uncork"),
        write: (chunk) => {
          calls.push("write");
          written.push(chunk);
          return true;
        },
      },
      execute,
      inputs,
    );
    expect(calls).toEqual(["cork", "write", "write", "write", "write", "uncork"]);
    expectSameFrame(new FrameDecoder().push(Buffer.concat(written))[0], execute, inputs);
  });

  it("rejects malformed frames with INTERNAL", () => {
    const bad = (bytes: Buffer): unknown => {
      try {
        new FrameDecoder().push(bytes);
        return undefined;
      } catch (error) {
        return error;
      }
    };
    const frameOf = (json: string, extra = Buffer.alloc(0)): Buffer => {
      const header = Buffer.from(json);
      const prefix = Buffer.alloc(8);
      prefix.writeUInt32LE(4 + header.length + extra.length, 0);
      prefix.writeUInt32LE(header.length, 4);
      return Buffer.concat([prefix, header, extra]);
    };
    for (const bytes of [
      Buffer.from([2, 0, 0, 0, 0, 0]), // frame length below the header-length field
      frameOf("{not json"),
      frameOf('{"type":"bogus"}'),
      frameOf('{"type":"execute","requestId":1,"tensors":[{"name":"x","datatype":"FP32","shape":[1],"byteLength":4}]}'),
      frameOf(
        '{"type":"execute","requestId":1,"tensors":[{"name":"x","datatype":"FP99","shape":[1],"byteLength":1}]}',
        Buffer.alloc(1),
      ),
      frameOf('{"type":"execute","requestId":1}', Buffer.alloc(3)),
    ]) {
      const error = bad(bytes);
      expect(error).toBeInstanceOf(OperonError);
      expect((error as OperonError).kind).toBe("INTERNAL");
    }
    const limited = new FrameDecoder({ maxFrameBytes: 100 });
    expect(() => limited.push(join(encodeFrame(execute, [tensor("x", "UINT8", [200], Buffer.alloc(200))])))).toThrow(
      /invalid frame length/,
    );
  });
});

describe("worker wire frames for tensors on a GPU", () => {
  it("carries a device tensor by its handle, without bytes, and a device-release", () => {
    const handle = Buffer.from(Array.from({ length: 72 }, (_, i) => i));
    const device: Tensor = {
      name: "mid",
      datatype: "FP32",
      shape: [1, 4],
      data: Buffer.alloc(0),
      device: { gpu: 1, handle, byteLength: 16, region: 7, release: () => undefined },
    };
    const bytes = join(
      encodeFrame({ type: "execute", requestId: 7, deviceOutputs: ["OUTPUT0"] }, [
        device,
        tensor("x", "UINT8", [2], Buffer.from([5, 6])),
      ]),
    );
    const [frame] = new FrameDecoder().push(bytes);
    expect(frame!.header).toMatchObject({ type: "execute", deviceOutputs: ["OUTPUT0"] });
    expect(frame!.device).toBe(true);
    expect(frame!.tensors[0]).toEqual({
      name: "mid",
      datatype: "FP32",
      shape: [1, 4],
      data: Buffer.alloc(0),
      device: { gpu: 1, handle, byteLength: 16, region: 7 },
    });
    expect([...frame!.tensors[1]!.data]).toEqual([5, 6]);
    const [release] = new FrameDecoder().push(join(encodeFrame({ type: "device-release", regions: [7, 8] })));
    expect(release!.header).toEqual({ type: "device-release", regions: [7, 8] });
    expect(release!.device).toBeUndefined();
  });

  it("rejects a device descriptor with bytes in the frame or malformed fields", () => {
    const frameOf = (descriptor: Record<string, unknown>, extra = Buffer.alloc(0)): Buffer => {
      const header = Buffer.from(JSON.stringify({ type: "execute", requestId: 1, tensors: [descriptor] }));
      const prefix = Buffer.alloc(8);
      prefix.writeUInt32LE(4 + header.length + extra.length, 0);
      prefix.writeUInt32LE(header.length, 4);
      return Buffer.concat([prefix, header, extra]);
    };
    const base = { name: "x", datatype: "FP32", shape: [1] };
    const device = { gpu: 0, handle: "AAAA", byteLength: 4, region: 1 };
    expect(() => new FrameDecoder().push(frameOf({ ...base, byteLength: 0, device }))).not.toThrow();
    for (const bad of [
      frameOf({ ...base, byteLength: 4, device }, Buffer.alloc(4)),
      frameOf({ ...base, byteLength: 0, device: { ...device, gpu: -1 } }),
      frameOf({ ...base, byteLength: 0, device: { ...device, handle: "not base64!" } }),
      frameOf({ ...base, byteLength: 0, device: { ...device, region: "1" } }),
    ])
      expect(() => new FrameDecoder().push(bad)).toThrow(/malformed tensor descriptor/);
  });
});

describe("worker wire frames for decoupled responses and BLS", () => {
  const out = tensor("OUT", "BYTES", [2], Buffer.from([1, 0, 0, 0, 0x61, 2, 0, 0, 0, 0x62, 0x63]));
  const messages: Array<[WorkerMessage, Tensor[]]> = [
    [{ type: "execute", requestId: 3, id: "req-1", parameters: { max_tokens: 4, stream: true, tag: "x" } }, inputs],
    [{ type: "response", requestId: 3, final: false }, [out]],
    // A final flag alone: zero tensors.
    [{ type: "response", requestId: 3, final: true }, []],
    [{ type: "response-error", requestId: 4, final: false, kind: "INVALID_ARG", message: "bad token" }, []],
    [
      {
        type: "response-error",
        requestId: 4,
        final: true,
        kind: "INTERNAL",
        message: "model did not send the final response",
      },
      [],
    ],
    [
      {
        type: "bls-request",
        blsId: 1,
        model: "add_sub",
        version: "2",
        outputNames: ["OUTPUT0"],
        parameters: { priority: 1 },
      },
      inputs,
    ],
    [{ type: "bls-request", blsId: 2, model: "tokenizer" }, []],
    [{ type: "bls-response", blsId: 1, ok: true }, [out]],
    [{ type: "bls-response", blsId: 2, ok: false, kind: "NOT_FOUND", message: "model 'tokenizer' is not loaded" }, []],
  ];

  it("round-trips response, response-error, bls-request and bls-response frames, one stream", () => {
    const bytes = join(messages.flatMap(([header, tensors]) => encodeFrame(header, tensors)));
    const frames = new FrameDecoder().push(bytes);
    expect(frames).toHaveLength(messages.length);
    messages.forEach(([header, tensors], i) => expectSameFrame(frames[i], header, tensors));
  });

  it("decodes each of them split at every byte boundary", () => {
    for (const [header, tensors] of messages) {
      const bytes = join(encodeFrame(header, tensors));
      for (let cut = 0; cut <= bytes.length; cut += 7) {
        const decoder = new FrameDecoder();
        const frames = [...decoder.push(bytes.subarray(0, cut)), ...decoder.push(bytes.subarray(cut))];
        expect(frames).toHaveLength(1);
        expectSameFrame(frames[0], header, tensors);
      }
    }
  });

  it("a bls-request's inputs may sit in the worker's shared half like outputs", () => {
    const half = Buffer.alloc(1024);
    inputs[0]!.data.copy(half, 64);
    const header: WorkerMessage = { type: "bls-request", blsId: 9, model: "m" };
    const [frame] = new FrameDecoder({ sharedMemory: half }).push(join(encodeFrame(header, inputs, [64])));
    expectSameFrame(frame, header, inputs);
    expect(frame!.shmOffsets).toEqual([64, undefined, undefined, undefined]);
  });
});

describe("worker wire frames with shared-memory tensors", () => {
  it("sends only the descriptor of a tensor placed in shared memory, and decodes it as a view of the half", () => {
    const half = Buffer.alloc(4096);
    const a = inputs[0]!;
    a.data.copy(half, 128);
    const pieces = encodeFrame(execute, inputs, [128, undefined, undefined, undefined]);
    // A's bytes are not in the frame; B and D are (C is empty).
    expect(pieces).toHaveLength(3);
    const bytes = join(pieces);
    const header = JSON.parse(bytes.toString("utf8", 8, 8 + bytes.readUInt32LE(4)));
    expect(header.tensors[0]).toEqual({ name: "A", datatype: "FP32", shape: [2, 3], byteLength: 24, shmOffset: 128 });
    expect(header.tensors[1]).not.toHaveProperty("shmOffset");

    const [frame] = new FrameDecoder({ sharedMemory: half }).push(bytes);
    expectSameFrame(frame, execute, inputs);
    expect(frame!.shmOffsets).toEqual([128, undefined, undefined, undefined]);
    const view = frame!.tensors[0]!.data;
    expect(view.buffer).toBe(half.buffer);
    half.writeFloatLE(42, 128);
    expect(view.readFloatLE(0)).toBe(42); // a view, not a copy
  });

  it("rejects a shared-memory tensor without a mapped half, or past its end, with INTERNAL", () => {
    const bytes = join(encodeFrame(execute, [inputs[0]!], [64]));
    expect(() => new FrameDecoder().push(bytes)).toThrow(/no shared segment is mapped/);
    expect(() => new FrameDecoder({ sharedMemory: Buffer.alloc(80) }).push(bytes)).toThrow(
      /runs past the end of the shared-memory half/,
    );
    const negative = join(encodeFrame(execute, [inputs[0]!], [-64]));
    expect(() => new FrameDecoder({ sharedMemory: Buffer.alloc(4096) }).push(negative)).toThrow(OperonError);
  });
});
