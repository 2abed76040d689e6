import { PerfError } from "./perf-error.js";

/** The sequence batcher's per-request controls (Triton's sequence_id / sequence_start / sequence_end). */
export interface SequenceFlags {
  id: bigint;
  start: boolean;
  end: boolean;
}

/** perf_analyzer's --sequence-id-range: ids are taken from [start, end] in turn and wrap around. */
export interface SequenceIdRange {
  start: bigint;
  end: bigint;
}

/** perf_analyzer's defaults: sequences of 20 requests, ids from 1 upwards (uint64). */
export const DEFAULT_SEQUENCE_LENGTH = 20;
export const DEFAULT_SEQUENCE_ID_RANGE: SequenceIdRange = { start: 1n, end: 2n ** 64n - 1n };

/** One sequence in progress: its id, and how many of its requests were sent. */
interface SequenceSlot {
  id: bigint;
  sent: number;
  busy: boolean;
}

/**
 * Turns a stream of inference calls into sequences for a model with
 * `sequence_batching`, as perf_analyzer does for stateful models: every
 * call belongs to one sequence of `length` requests (the first marked
 * start, the last end), a sequence has at most one request in flight
 * (its state advances in order), and a call that finds every open
 * sequence busy opens a new one, so the number of open sequences follows
 * the load's concurrency. `finish()` ends the sequences still open, so
 * the server's slots are freed when the run stops rather than at the
 * idle timeout.
 */
export class SequenceDriver {
  private readonly slots: SequenceSlot[] = [];
  private nextId: bigint;

  constructor(
    private readonly send: (flags: SequenceFlags) => Promise<void>,
    private readonly length: number,
    private readonly ids: SequenceIdRange,
  ) {
    if (!Number.isSafeInteger(length) || length < 1) {
      throw new PerfError("BAD_OPTIONS", `--sequence-length must be a whole number >= 1, got ${length}`);
    }
    this.nextId = ids.start;
  }

  /** Sends the next request of an idle open sequence, or the first request of a new one. */
  async infer(): Promise<void> {
    const slot = this.slots.find((candidate) => !candidate.busy) ?? this.open();
    slot.busy = true;
    const start = slot.sent === 0;
    const end = slot.sent + 1 >= this.length;
    try {
      await this.send({ id: slot.id, start, end });
      slot.sent += 1;
    } catch (error) {
      // A failed request leaves the sequence in an unknown state on the server: start a fresh one next time.
      this.retire(slot);
      throw error;
    } finally {
      slot.busy = false;
    }
    if (end) this.retire(slot);
  }

  /** A one-request sequence (start and end): the warm-up request of a sequence model. */
  single(): Promise<void> {
    return this.send({ id: this.takeId(), start: true, end: true });
  }

  /** Ends every open, idle sequence that has started; failures are ignored (the server frees the slot at its idle timeout). */
  async finish(): Promise<void> {
    const open = this.slots.filter((slot) => slot.sent > 0 && !slot.busy);
    this.slots.length = 0;
    await Promise.allSettled(open.map((slot) => this.send({ id: slot.id, start: false, end: true })));
  }

  /** How many sequences are open now (for tests and the report). */
  get openSequences(): number {
    return this.slots.length;
  }

  private open(): SequenceSlot {
    const slot: SequenceSlot = { id: this.takeId(), sent: 0, busy: false };
    this.slots.push(slot);
    return slot;
  }

  private retire(slot: SequenceSlot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
  }

  private takeId(): bigint {
    const id = this.nextId;
    this.nextId = id >= this.ids.end ? this.ids.start : id + 1n;
    return id;
  }
}

/** Parses --sequence-id-range `start[:end]` (uint64, start <= end, start >= 1: id 0 means "no sequence" to Triton). */
export function parseSequenceIdRange(text: string): SequenceIdRange {
  const match = /^\s*(\d+)\s*(?::\s*(\d+)\s*)?$/.exec(text);
  if (match === null) {
    throw new PerfError("BAD_OPTIONS", `--sequence-id-range '${text}': expected start or start:end (whole numbers)`);
  }
  const start = BigInt(match[1]!);
  const end = match[2] === undefined ? DEFAULT_SEQUENCE_ID_RANGE.end : BigInt(match[2]);
  const max = 2n ** 64n - 1n;
  if (start < 1n || start > max || end > max) {
    throw new PerfError("BAD_OPTIONS", `--sequence-id-range '${text}': ids are from 1 to ${max} (0 means no sequence)`);
  }
  if (end < start) throw new PerfError("BAD_OPTIONS", `--sequence-id-range '${text}': end is below start`);
  return { start, end };
}
