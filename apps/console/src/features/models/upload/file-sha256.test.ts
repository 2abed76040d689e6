import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fileSha256, HASH_SLICE_BYTES, UploadCancelled } from "./file-sha256";

describe("fileSha256", () => {
  it("matches node's SHA-256 over several slices and reports progress up to the size", async () => {
    const bytes = randomBytes(2 * HASH_SLICE_BYTES + 12_345);
    const progress: number[] = [];
    const hex = await fileSha256(new Blob([bytes]), (done) => progress.push(done));
    expect(hex).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(progress).toEqual([HASH_SLICE_BYTES, 2 * HASH_SLICE_BYTES, bytes.length]);
  });

  it("hashes an empty file", async () => {
    expect(await fileSha256(new Blob([]), () => undefined)).toBe(createHash("sha256").digest("hex"));
  });

  it("stops between slices when cancelled", async () => {
    let calls = 0;
    await expect(
      fileSha256(
        new Blob([randomBytes(HASH_SLICE_BYTES + 1)]),
        () => (calls += 1),
        () => calls >= 1,
      ),
    ).rejects.toBeInstanceOf(UploadCancelled);
    expect(calls).toBe(1);
  });
});
