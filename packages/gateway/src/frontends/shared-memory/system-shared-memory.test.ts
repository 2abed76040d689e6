import { mkdtempSync, rmSync, unlinkSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InferRequest } from "@operon/protocol/inference";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SystemSharedMemory } from "./system-shared-memory.js";

let dir: string;
let shm: SystemSharedMemory;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "operon-shm-unit-"));
  shm = new SystemSharedMemory({ shmDir: dir, maxRegions: 2, maxRequestBytes: 256 });
});

afterEach(async () => {
  await shm.close();
  rmSync(dir, { recursive: true, force: true });
});

function object(name: string, bytes: Buffer): string {
  writeFileSync(join(dir, name), bytes);
  return `/${name}`;
}

function request(
  region: string,
  byteSize: number,
  offset = 0,
  output?: { region: string; byteSize: number },
): InferRequest {
  return {
    modelName: "m",
    parameters: {},
    inputs: [
      {
        name: "IN",
        datatype: "UINT8",
        shape: [byteSize],
        data: Buffer.alloc(0),
        parameters: { shared_memory_region: region, shared_memory_byte_size: byteSize, shared_memory_offset: offset },
      },
    ],
    ...(output !== undefined
      ? {
          outputs: [
            {
              name: "OUT",
              parameters: { shared_memory_region: output.region, shared_memory_byte_size: output.byteSize },
            },
          ],
        }
      : {}),
    sharedMemory: true,
  };
}

describe("SystemSharedMemory", () => {
  it("reads an input window relative to the region's own offset and strips the region parameters", async () => {
    const key = object("a", Buffer.from([0, 1, 2, 3, 4, 5, 6, 7]));
    await shm.register("r", key, 2, 6, null);
    const req = request("r", 3, 1);
    const use = await shm.resolve(req, null);
    expect([...req.inputs[0]!.data]).toEqual([3, 4, 5]);
    expect(req.inputs[0]!.parameters).toBeUndefined();
    shm.release(use);
  });

  it("writes an output at its window and returns it without bytes", async () => {
    const key = object("o", Buffer.alloc(8));
    await shm.register("in", object("i", Buffer.alloc(4)), 0, 4, null);
    await shm.register("out", key, 4, 4, null);
    const use = await shm.resolve(request("in", 4, 0, { region: "out", byteSize: 4 }), null);
    const response = await shm.writeOutputs(use, {
      modelName: "m",
      modelVersion: "1",
      outputs: [{ name: "OUT", datatype: "UINT8", shape: [2], data: Buffer.from([9, 8]) }],
    });
    shm.release(use);
    expect(response.outputs[0]!.data.length).toBe(0);
    expect([...readFileSync(join(dir, "o"))]).toEqual([0, 0, 0, 0, 9, 8, 0, 0]);
  });

  it("keeps a region a request is using open through an unregister, and refuses new requests at once", async () => {
    await shm.register("r", object("a", Buffer.from([1, 2, 3, 4])), 0, 4, null);
    const held = await shm.resolve(request("r", 2), null);
    await shm.unregister("r", null);
    await expect(shm.resolve(request("r", 2), null)).rejects.toThrow(/unable to find system shared memory region: 'r'/);
    // The descriptor is closed only now, after the last user: no read of a reused descriptor number.
    shm.release(held);
    expect(shm.size).toBe(0);
  });

  it("scopes regions to the key that registered them", async () => {
    await shm.register("r", object("a", Buffer.alloc(4)), 0, 4, "key-a");
    expect(shm.status(undefined, "key-b")).toEqual([]);
    expect(() => shm.status("r", "key-b")).toThrow(/unable to find/);
    await expect(shm.resolve(request("r", 4), "key-b")).rejects.toThrow(/unable to find/);
    await shm.unregister("r", "key-b");
    expect(shm.status(undefined, "key-a")).toHaveLength(1);
  });

  it("caps the regions held and the bytes one request moves", async () => {
    await shm.register("r1", object("a", Buffer.alloc(512)), 0, 512, null);
    await shm.register("r2", object("b", Buffer.alloc(4)), 0, 4, null);
    await expect(shm.register("r3", object("c", Buffer.alloc(4)), 0, 4, null)).rejects.toThrow(
      /2 shared memory regions/,
    );
    await expect(shm.resolve(request("r1", 512), null)).rejects.toThrow(/span 512 bytes; at most 256/);
  });

  it("fails a request whose object was unlinked, and one whose object shrank", async () => {
    await shm.register("r", object("a", Buffer.alloc(8)), 0, 8, null);
    writeFileSync(join(dir, "a"), Buffer.alloc(2));
    await expect(shm.resolve(request("r", 8), null)).rejects.toThrow(/shrank to 2 bytes/);
    unlinkSync(join(dir, "a"));
    await expect(shm.resolve(request("r", 2), null)).rejects.toThrow(/unlinked by its owner/);
  });

  it("lets only one of two concurrent registrations of a name win", async () => {
    const key = object("a", Buffer.alloc(4));
    const results = await Promise.allSettled([shm.register("r", key, 0, 4, null), shm.register("r", key, 0, 4, null)]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
  });
});
