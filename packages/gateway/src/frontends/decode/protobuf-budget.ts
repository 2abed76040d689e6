import { OperonError } from "@operon/protocol/errors";

/**
 * Bounds on a gRPC request message, checked on its bytes before it is
 * decoded. Decoding builds one JS value per repeated entry, and a 64-bit
 * integer one string each (the loader's `longs: String`): 46 MB of unpacked
 * shape entries is 24 million strings and gigabytes of heap. The scan walks
 * the message's fields, and those of the sub-messages that hold repeated
 * entries, without allocating, and counts what decoding would create.
 */
export interface InferMessageBudget {
  maxInputs: number;
  maxOutputs: number;
  /** Parameters of the request, its inputs and its outputs, together. */
  maxParameters: number;
  /** Dimensions of one input's shape. */
  maxShapeDims: number;
  /** Elements of the typed `contents` (bool, int, uint, fp32, fp64 …) of all inputs together. */
  maxContentElements: number;
  /** Entries of the `bytes_contents` of all inputs together (each is one Buffer when decoded). */
  maxBytesElements: number;
}

export const DEFAULT_INFER_MESSAGE_BUDGET: InferMessageBudget = {
  maxInputs: 1024,
  maxOutputs: 1024,
  maxParameters: 1024,
  maxShapeDims: 64,
  maxContentElements: 8 * 1024 * 1024,
  maxBytesElements: 1024 * 1024,
};

/** Map entries of a RepositoryModelLoad/Unload request (its `config` and `file:` parameters). */
export const DEFAULT_MAX_REPOSITORY_PARAMETERS = 1024;

// Field numbers of grpc_service.proto.
const REQUEST = { PARAMETERS: 4, INPUTS: 5, OUTPUTS: 6, RAW_INPUT_CONTENTS: 7 } as const;
const INPUT = { SHAPE: 3, PARAMETERS: 4, CONTENTS: 5 } as const;
const OUTPUT = { PARAMETERS: 2 } as const;
const CONTENTS_BYTES = 8;
/** InferTensorContents fields by wire size of one packed element: 0 = varint. */
const CONTENTS_ELEMENT_SIZE: Record<number, number> = { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 4, 7: 8 };
const REPOSITORY_PARAMETERS = 3;

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/** Stops the scan: the message is malformed, and the decoder says how. */
const MALFORMED = Symbol("malformed");

/**
 * Visits the fields of message[start, end). For a length-delimited field the
 * visitor gets its payload's range; for others its wire type (and the value
 * range, for counting unpacked entries).
 */
function forEachField(
  message: Uint8Array,
  start: number,
  end: number,
  visit: (field: number, wireType: number, from: number, to: number) => void,
): void {
  let offset = start;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i += 1) {
      if (offset >= end) throw MALFORMED;
      const byte = message[offset++]!;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
    throw MALFORMED;
  };
  while (offset < end) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wireType = key & 7;
    const from = offset;
    if (wireType === VARINT) varint();
    else if (wireType === FIXED64) offset += 8;
    else if (wireType === FIXED32) offset += 4;
    else if (wireType === LENGTH_DELIMITED) {
      const size = varint();
      if (offset + size > end) throw MALFORMED;
      visit(field, wireType, offset, offset + size);
      offset += size;
      continue;
    } else throw MALFORMED; // groups or garbage
    if (offset > end) throw MALFORMED;
    visit(field, wireType, from, offset);
  }
}

/** Varint values in a packed field: one per byte without the continuation bit. */
function packedVarintCount(message: Uint8Array, from: number, to: number): number {
  let count = 0;
  for (let i = from; i < to; i += 1) if ((message[i]! & 0x80) === 0) count += 1;
  return count;
}

/** Throws RESOURCE_EXHAUSTED naming the limit; a malformed message is left to the decoder. */
export function assertInferMessageWithinBudget(
  message: Uint8Array,
  budget: InferMessageBudget = DEFAULT_INFER_MESSAGE_BUDGET,
): void {
  let inputs = 0;
  let outputs = 0;
  let parameters = 0;
  let raws = 0;
  let contentElements = 0;
  let bytesElements = 0;
  const countParameter = () => {
    if (++parameters > budget.maxParameters)
      throw exhausted(`more than ${budget.maxParameters} parameters (request, inputs and outputs together)`);
  };
  const countContents = (n: number) => {
    contentElements += n;
    if (contentElements > budget.maxContentElements) {
      throw exhausted(
        `more than ${budget.maxContentElements} elements in typed 'contents' (send large tensors in raw_input_contents)`,
      );
    }
  };
  const scanContents = (from: number, to: number) =>
    forEachField(message, from, to, (field, wireType, start, end) => {
      if (field === CONTENTS_BYTES) {
        if (++bytesElements > budget.maxBytesElements)
          throw exhausted(`more than ${budget.maxBytesElements} BYTES elements in 'bytes_contents'`);
        return;
      }
      const size = CONTENTS_ELEMENT_SIZE[field];
      if (size === undefined) return;
      if (wireType !== LENGTH_DELIMITED) countContents(1);
      else countContents(size === 0 ? packedVarintCount(message, start, end) : Math.floor((end - start) / size));
    });
  const scanInput = (from: number, to: number) => {
    let dims = 0;
    forEachField(message, from, to, (field, wireType, start, end) => {
      if (field === INPUT.SHAPE) {
        dims += wireType === LENGTH_DELIMITED ? packedVarintCount(message, start, end) : 1;
        if (dims > budget.maxShapeDims)
          throw exhausted(`an input whose shape has more than ${budget.maxShapeDims} dimensions`);
      } else if (field === INPUT.PARAMETERS && wireType === LENGTH_DELIMITED) countParameter();
      else if (field === INPUT.CONTENTS && wireType === LENGTH_DELIMITED) scanContents(start, end);
    });
  };
  try {
    forEachField(message, 0, message.length, (field, wireType, start, end) => {
      if (wireType !== LENGTH_DELIMITED) return;
      if (field === REQUEST.INPUTS) {
        if (++inputs > budget.maxInputs) throw exhausted(`more than ${budget.maxInputs} inputs`);
        scanInput(start, end);
      } else if (field === REQUEST.OUTPUTS) {
        if (++outputs > budget.maxOutputs) throw exhausted(`more than ${budget.maxOutputs} requested outputs`);
        forEachField(message, start, end, (f, w) => {
          if (f === OUTPUT.PARAMETERS && w === LENGTH_DELIMITED) countParameter();
        });
      } else if (field === REQUEST.PARAMETERS) countParameter();
      else if (field === REQUEST.RAW_INPUT_CONTENTS && ++raws > budget.maxInputs)
        throw exhausted(`more than ${budget.maxInputs} raw_input_contents`);
    });
  } catch (error) {
    if (error !== MALFORMED) throw error;
  }
}

/** A RepositoryModelLoad/Unload request: at most `maxParameters` map entries. */
export function assertRepositoryMessageWithinBudget(
  message: Uint8Array,
  maxParameters: number = DEFAULT_MAX_REPOSITORY_PARAMETERS,
): void {
  let parameters = 0;
  try {
    forEachField(message, 0, message.length, (field, wireType) => {
      if (field === REPOSITORY_PARAMETERS && wireType === LENGTH_DELIMITED && ++parameters > maxParameters) {
        throw new OperonError(
          "RESOURCE_EXHAUSTED",
          `the repository request holds more than ${maxParameters} parameters; this server accepts at most that many`,
        );
      }
    });
  } catch (error) {
    if (error !== MALFORMED) throw error;
  }
}

function exhausted(what: string): OperonError {
  return new OperonError(
    "RESOURCE_EXHAUSTED",
    `the inference request holds ${what}; this server accepts at most that many`,
  );
}

/** How many top-level fields peekInferRequestNames reads at most: the names come first in what clients send. */
const PEEK_FIELDS = 64;
const STOP_PEEK = Symbol("stop peeking");

/**
 * The model name, version and id of a ModelInferRequest, read from its
 * first top-level fields without decoding the rest: an error reply to a
 * message that could not be decoded still names the request it answers.
 * Empty strings where absent, unreadable or beyond the first fields.
 */
export function peekInferRequestNames(message: Uint8Array): { model_name: string; model_version: string; id: string } {
  const names = { model_name: "", model_version: "", id: "" };
  const decoder = new TextDecoder();
  let fields = 0;
  try {
    forEachField(message, 0, message.length, (field, wireType, start, end) => {
      if (++fields > PEEK_FIELDS) throw STOP_PEEK;
      if (wireType !== LENGTH_DELIMITED) return;
      if (field === 1) names.model_name = decoder.decode(message.subarray(start, end));
      else if (field === 2) names.model_version = decoder.decode(message.subarray(start, end));
      else if (field === 3) names.id = decoder.decode(message.subarray(start, end));
    });
  } catch (error) {
    if (error !== MALFORMED && error !== STOP_PEEK) throw error;
  }
  return names;
}
