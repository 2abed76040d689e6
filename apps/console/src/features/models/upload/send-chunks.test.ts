import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { bytesToBase64 } from "./base64";
import { UploadCancelled } from "./file-sha256";
import { sendChunks } from "./send-chunks";

describe("bytesToBase64", () => {
  it("matches Buffer's base64 for sizes around the piece boundary", () => {
    for (const size of [0, 1, 2, 3, 0x8000 - 1, 0x8000, 0x8000 + 1, 100_000]) {
      const bytes = randomBytes(size);
      expect(bytesToBase64(new Uint8Array(bytes))).toBe(bytes.toString("base64"));
    }
  });
});

describe("sendChunks", () => {
  it("sends the file in order, chunkBytes at a time, at the offsets received so far", async () => {
    const bytes = randomBytes(10_000);
    const sent: Array<{ offset: number; length: number }> = [];
    const received: Buffer[] = [];
    const progress: number[] = [];
    await sendChunks({
      file: new Blob([bytes]),
      chunkBytes: 4096,
      send: async ({ offset, data }) => {
        const chunk = Buffer.from(data, "base64");
        sent.push({ offset, length: chunk.length });
        received.push(chunk);
        return { receivedBytes: offset + chunk.length };
      },
      onProgress: (done) => progress.push(done),
      cancelled: () => false,
    });
    expect(sent).toEqual([
      { offset: 0, length: 4096 },
      { offset: 4096, length: 4096 },
      { offset: 8192, length: 1808 },
    ]);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
    expect(progress).toEqual([4096, 8192, 10_000]);
  });

  it("stops before the next chunk once cancelled", async () => {
    let sends = 0;
    const run = sendChunks({
      file: new Blob([randomBytes(10_000)]),
      chunkBytes: 4096,
      send: async ({ offset, data }) => {
        sends += 1;
        return { receivedBytes: offset + Buffer.from(data, "base64").length };
      },
      onProgress: () => undefined,
      cancelled: () => sends >= 1,
    });
    await expect(run).rejects.toBeInstanceOf(UploadCancelled);
    expect(sends).toBe(1);
  });
});
