import { bytesToBase64 } from "./base64";
import { UploadCancelled } from "./file-sha256";

/**
 * Sends the file in order, `chunkBytes` at a time (the size models.upload.begin
 * gave), each chunk at the offset the server has received so far. Stops
 * between chunks when `cancelled()` turns true (the chunk in flight finishes:
 * the server refuses an abort while it writes).
 */
export async function sendChunks(options: {
  file: Blob;
  chunkBytes: number;
  send: (chunk: { offset: number; data: string }) => Promise<{ receivedBytes: number }>;
  onProgress: (receivedBytes: number) => void;
  cancelled: () => boolean;
}): Promise<void> {
  const { file, chunkBytes, send, onProgress, cancelled } = options;
  let offset = 0;
  while (offset < file.size) {
    if (cancelled()) throw new UploadCancelled();
    const bytes = new Uint8Array(await file.slice(offset, offset + chunkBytes).arrayBuffer());
    const { receivedBytes } = await send({ offset, data: bytesToBase64(bytes) });
    offset = receivedBytes;
    onProgress(receivedBytes);
  }
}
