import type { DecodedInferHeader } from "./http-infer-request.js";

/**
 * The last JSON header each model's binary requests carried, with what it decoded to. A client sending tensors as
 * binary data (Triton's clients, perf_analyzer, an image service) sends the same header bytes on every request of
 * a shape: names, datatypes, shapes, sizes. When the bytes match byte for byte, the header is not parsed and
 * checked again; only the tensor data is attached (assembleInferRequest, which copies what a request may change).
 * Identical bytes decode identically, so a hit answers exactly what decoding would, errors in the tensor data
 * included; the JSON budget was passed by the same bytes before.
 *
 * Bounded: one entry per model name, headers of at most maxHeaderBytes, at most maxEntries names (the oldest is
 * dropped first), so a client naming many models, or sending a large header, costs at most
 * maxEntries × maxHeaderBytes. Entries hold a copy of the header, never the request's body.
 */
export class BinaryHeaderMemo {
  private readonly entries = new Map<string, { bytes: Buffer; header: DecodedInferHeader }>();

  constructor(
    readonly maxEntries = 256,
    readonly maxHeaderBytes = 4096,
  ) {}

  /** The decoded header `model`'s requests last sent when `bytes` are those bytes again. */
  lookup(model: string, bytes: Buffer): DecodedInferHeader | undefined {
    const entry = this.entries.get(model);
    return entry !== undefined && entry.bytes.equals(bytes) ? entry.header : undefined;
  }

  /**
   * Remembers a header just decoded from `bytes` for `model`; true when it did, and the header now serves other
   * requests. Headers naming shared memory are not kept (their inputs carry no data to attach).
   */
  remember(model: string, bytes: Buffer, header: DecodedInferHeader): boolean {
    if (bytes.length > this.maxHeaderBytes || header.sharedMemory) return false;
    if (!this.entries.has(model) && this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    // Its own memory, not a slice of Buffer's shared 8 KiB pool: a kept header holds nothing else alive.
    const copy = Buffer.allocUnsafeSlow(bytes.length);
    bytes.copy(copy);
    this.entries.set(model, { bytes: copy, header });
    return true;
  }

  get size(): number {
    return this.entries.size;
  }
}
