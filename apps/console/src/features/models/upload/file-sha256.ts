import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

/** Bytes read per step while hashing: small enough to report progress often, large enough to be quick. */
export const HASH_SLICE_BYTES = 4 * 1024 * 1024;

/**
 * The file's SHA-256 (lower-case hex), computed incrementally as the file is
 * read slice by slice, so a large model is never held in memory at once.
 * Pure JS (@noble/hashes): crypto.subtle exists only in secure contexts,
 * and the console is often opened over plain HTTP. Throws "cancelled" when
 * `cancelled()` turns true between slices.
 */
export async function fileSha256(
  file: Blob,
  onProgress: (bytesRead: number) => void,
  cancelled: () => boolean = () => false,
): Promise<string> {
  const hash = sha256.create();
  for (let offset = 0; offset < file.size; offset += HASH_SLICE_BYTES) {
    if (cancelled()) throw new UploadCancelled();
    const slice = new Uint8Array(await file.slice(offset, offset + HASH_SLICE_BYTES).arrayBuffer());
    hash.update(slice);
    onProgress(Math.min(file.size, offset + slice.length));
  }
  return bytesToHex(hash.digest());
}

/** Thrown by the upload steps when the person cancelled between two steps. */
export class UploadCancelled extends Error {
  constructor() {
    super("cancelled");
    this.name = "UploadCancelled";
  }
}
