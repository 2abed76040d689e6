import { OperonError } from "@operon/protocol/errors";

/**
 * Bounds on a ModelInferRequest, checked on its bytes before it is decoded.
 * Decoding builds one JS object per repeated entry: 9.5 MB of empty
 * `inputs` entries is five million objects and seconds of CPU. The scan
 * walks the message's top-level fields only (no allocation) and counts the
 * repeated ones.
 */
export interface InferMessageBudget {
  maxInputs: number;
  maxOutputs: number;
  maxParameters: number;
}

export const DEFAULT_INFER_MESSAGE_BUDGET: InferMessageBudget = { maxInputs: 1024, maxOutputs: 1024, maxParameters: 1024 };

const PARAMETERS = 4;
const INPUTS = 5;
const OUTPUTS = 6;
const RAW_INPUT_CONTENTS = 7;

/** Throws RESOURCE_EXHAUSTED naming the limit; a malformed message is left to the decoder. */
export function assertInferMessageWithinBudget(message: Uint8Array, budget: InferMessageBudget = DEFAULT_INFER_MESSAGE_BUDGET): void {
  let inputs = 0;
  let outputs = 0;
  let parameters = 0;
  let raws = 0;
  let offset = 0;
  const length = message.length;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i += 1) {
      if (offset >= length) return -1;
      const byte = message[offset++]!;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
    return -1;
  };
  while (offset < length) {
    const key = varint();
    if (key < 0) return;
    const field = Math.floor(key / 8);
    const wireType = key & 7;
    if (wireType === 0) {
      if (varint() < 0) return;
    } else if (wireType === 1) offset += 8;
    else if (wireType === 5) offset += 4;
    else if (wireType === 2) {
      const size = varint();
      if (size < 0) return;
      offset += size;
      if (field === INPUTS && ++inputs > budget.maxInputs) throw exhausted(`more than ${budget.maxInputs} inputs`);
      if (field === OUTPUTS && ++outputs > budget.maxOutputs) throw exhausted(`more than ${budget.maxOutputs} requested outputs`);
      if (field === PARAMETERS && ++parameters > budget.maxParameters) throw exhausted(`more than ${budget.maxParameters} parameters`);
      if (field === RAW_INPUT_CONTENTS && ++raws > budget.maxInputs) throw exhausted(`more than ${budget.maxInputs} raw_input_contents`);
    } else return; // groups or garbage: the decoder says what is wrong
  }
}

function exhausted(what: string): OperonError {
  return new OperonError("RESOURCE_EXHAUSTED", `the inference request holds ${what}; this server accepts at most that many`);
}
