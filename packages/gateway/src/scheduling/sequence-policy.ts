import { type DataType, elementByteSize, elementCount, fromConfigDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { Parameters, Tensor } from "@operon/protocol/tensor";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";

/**
 * The rules of a model's sequence_batching (Triton's sequence batcher),
 * read once from its config, and a request's sequence parameters.
 *
 * Control inputs are tensors the server adds to every request of a
 * sequence (the client never sends them): START (1 on the sequence's
 * first request), END (1 on its last), READY (1: the batch row holds a
 * request; Operon only sends rows that do) and CORRID (the correlation id).
 * Each START/END/READY control says its type by which of int32_false_true,
 * fp32_false_true or bool_false_true it sets; CORRID by data_type
 * (UINT64, INT64, UINT32, INT32 or STRING).
 *
 * Implicit state (`state`): the server feeds input_name on each request
 * and keeps output_name from the response for the next one, so a
 * recurrent model's state never travels to the client. The first request
 * gets initial_state (zero_data or data_file) or zeros.
 */
export type ControlKind = "START" | "END" | "READY" | "CORRID";

export interface ControlSpec {
  name: string;
  kind: ControlKind;
  datatype: DataType;
  /** The false and true values for START / END / READY. */
  falseTrue?: readonly [number | boolean, number | boolean];
}

export interface StateSpec {
  inputName: string;
  outputName: string;
  datatype: DataType;
  /** Shape of one sequence's state as the model sees it (batch dimension 1 included when the model batches). */
  shape: number[];
  /** The first request's state (one sequence's bytes). */
  initial: Buffer;
}

export interface SequencePolicy {
  strategy: "direct" | "oldest";
  /** The model's max_batch_size (0: requests carry no batch dimension, one row per execution). */
  maxBatchSize: number;
  /** Sequences an instance holds at once (direct: its batch slots; oldest: max_candidate_sequences). */
  slotsPerInstance: number;
  /** An active sequence with no request for this long is released (Triton's default: 1 s). */
  maxIdleNs: number;
  maxQueueDelayNs: number;
  preferredBatchSizes: number[];
  controls: ControlSpec[];
  states: StateSpec[];
  /** Input and output names the server supplies or keeps (never the client's). */
  reservedInputs: ReadonlySet<string>;
  reservedOutputs: ReadonlySet<string>;
}

/** Triton's default for max_sequence_idle_microseconds (0 or absent). */
export const DEFAULT_MAX_SEQUENCE_IDLE_US = 1_000_000;

/** The largest implicit state one sequence may hold; the config may come with a load request. */
export const MAX_STATE_BYTES = 64 * 1024 * 1024;

const CONTROL_KINDS: Record<string, ControlKind> = {
  CONTROL_SEQUENCE_START: "START",
  CONTROL_SEQUENCE_END: "END",
  CONTROL_SEQUENCE_READY: "READY",
  CONTROL_SEQUENCE_CORRID: "CORRID",
};

const CORRID_TYPES: ReadonlySet<DataType> = new Set(["UINT64", "INT64", "UINT32", "INT32", "BYTES"]);

/**
 * The policy of a sequence model; undefined for a model without
 * sequence_batching. `initialStateFiles` holds the bytes of each state's
 * initial_state.data_file, by state input name (the loader reads them from
 * the model's initial_state/ folder). Throws INVALID_ARG naming the field.
 */
export function sequencePolicyFromConfig(
  config: ModelConfigJson,
  initialStateFiles: ReadonlyMap<string, Buffer> = new Map(),
): SequencePolicy | undefined {
  const sequence = config.sequence_batching;
  if (sequence === undefined) return undefined;
  const where = `model '${config.name ?? ""}': sequence_batching`;
  const maxBatchSize = config.max_batch_size ?? 0;
  const strategy = sequence.oldest !== undefined ? "oldest" : "direct";
  const controls: ControlSpec[] = [];
  for (const [index, input] of (sequence.control_input ?? []).entries()) {
    const name = input.name ?? "";
    if (name === "") throw invalid(`${where}.control_input[${index}].name must not be empty`);
    const list = input.control ?? [];
    if (list.length !== 1)
      throw invalid(`${where}.control_input '${name}' must have exactly one control, got ${list.length}`);
    const control = list[0]!;
    const kind = CONTROL_KINDS[control.kind ?? "CONTROL_SEQUENCE_START"];
    if (kind === undefined) throw invalid(`${where}.control_input '${name}': unknown kind '${control.kind}'`);
    if (kind === "CORRID") {
      const datatype = fromConfigDataType(control.data_type ?? "TYPE_INVALID");
      if (datatype === undefined || !CORRID_TYPES.has(datatype))
        throw invalid(
          `${where}.control_input '${name}': CONTROL_SEQUENCE_CORRID needs data_type TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING, got '${control.data_type ?? ""}'`,
        );
      controls.push({ name, kind, datatype });
      continue;
    }
    const forms: Array<[DataType, readonly (number | boolean)[] | undefined]> = [
      ["INT32", control.int32_false_true],
      ["FP32", control.fp32_false_true],
      ["BOOL", control.bool_false_true],
    ];
    const set = forms.filter(([, values]) => values !== undefined && values.length > 0);
    if (set.length !== 1 || set[0]![1]!.length !== 2)
      throw invalid(
        `${where}.control_input '${name}': ${control.kind} needs exactly one of int32_false_true, fp32_false_true or bool_false_true, with two values (false, true)`,
      );
    const [datatype, values] = set[0]!;
    controls.push({ name, kind, datatype, falseTrue: [values![0]!, values![1]!] });
  }
  const batching = maxBatchSize > 0;
  const states: StateSpec[] = [];
  for (const [index, raw] of (sequence.state ?? []).entries()) {
    const state = raw as {
      input_name?: string;
      output_name?: string;
      data_type?: string;
      dims?: number[];
      initial_state?: Array<{ data_type?: string; dims?: number[]; zero_data?: boolean; data_file?: string }>;
    };
    const inputName = state.input_name ?? "";
    const outputName = state.output_name ?? "";
    if (inputName === "" || outputName === "")
      throw invalid(`${where}.state[${index}] needs input_name and output_name`);
    const datatype = fromConfigDataType(state.data_type ?? "TYPE_INVALID");
    if (datatype === undefined || datatype === "BYTES")
      throw invalid(
        `${where}.state '${inputName}': data_type must be a fixed-size tensor type, got '${state.data_type}'`,
      );
    const initial = state.initial_state?.[0];
    const dims = initial?.dims !== undefined && initial.dims.length > 0 ? initial.dims : (state.dims ?? []);
    if (!dims.every((dim) => Number.isInteger(dim) && dim >= 0))
      throw invalid(
        `${where}.state '${inputName}': dims [${dims}] must be fixed (give initial_state.dims for a variable-size state)`,
      );
    const shape = batching ? [1, ...dims] : [...dims];
    const bytes = elementCount(shape) * elementByteSize(datatype)!;
    if (bytes > MAX_STATE_BYTES)
      throw invalid(
        `${where}.state '${inputName}': ${bytes} bytes per sequence, more than the ${MAX_STATE_BYTES} allowed`,
      );
    let data = Buffer.alloc(bytes);
    if (initial?.data_file) {
      const file = initialStateFiles.get(inputName);
      if (file === undefined || file.length !== bytes)
        throw invalid(
          `${where}.state '${inputName}': initial_state data_file '${initial.data_file}' must hold ${bytes} bytes (shape [${shape}] of ${datatype}), got ${file?.length ?? "no file"}`,
        );
      data = Buffer.from(file);
    }
    states.push({ inputName, outputName, datatype, shape, initial: data });
  }
  const oldest = sequence.oldest;
  const delayUs =
    strategy === "oldest"
      ? (oldest?.max_queue_delay_microseconds ?? 0)
      : (sequence.direct?.max_queue_delay_microseconds ?? 0);
  const idleUs = Number(sequence.max_sequence_idle_microseconds ?? 0) || DEFAULT_MAX_SEQUENCE_IDLE_US;
  const candidates = oldest?.max_candidate_sequences ?? 0;
  return {
    strategy,
    maxBatchSize,
    slotsPerInstance: strategy === "oldest" && candidates > 0 ? candidates : Math.max(1, maxBatchSize),
    maxIdleNs: idleUs * 1000,
    maxQueueDelayNs: Number(delayUs) * 1000,
    preferredBatchSizes: [...(oldest?.preferred_batch_size ?? [])].sort((a, b) => a - b),
    controls,
    states,
    reservedInputs: new Set([...controls.map((control) => control.name), ...states.map((state) => state.inputName)]),
    reservedOutputs: new Set(states.map((state) => state.outputName)),
  };
}

/** A request's sequence: its correlation id and flags (the `sequence` extension's parameters). */
export interface SequenceFlags {
  /** The correlation id: a uint64 (bigint) or a string. */
  id: bigint | string;
  /** Map key: ids 5 and "5" are different sequences, as in Triton. */
  key: string;
  start: boolean;
  end: boolean;
}

const MAX_UINT64 = (1n << 64n) - 1n;

/** Longest string correlation id accepted (it is kept per sequence and echoed in errors). */
export const MAX_STRING_SEQUENCE_ID_BYTES = 256;

/**
 * The sequence parameters of a request to a sequence model: `sequence_id`
 * (a uint64 or a string; 0 and "" are no id), `sequence_start`,
 * `sequence_end` (booleans). INVALID_ARG when malformed or absent, in
 * Triton's words.
 */
export function sequenceFlagsOf(parameters: Parameters, modelName: string): SequenceFlags {
  const raw = parameters.sequence_id;
  let id: bigint | string;
  if (typeof raw === "string") {
    if (Buffer.byteLength(raw) > MAX_STRING_SEQUENCE_ID_BYTES)
      throw invalid(`parameter 'sequence_id' is longer than ${MAX_STRING_SEQUENCE_ID_BYTES} bytes`);
    id = raw;
  } else if (typeof raw === "bigint") {
    id = raw;
  } else if (typeof raw === "number") {
    if (!Number.isSafeInteger(raw))
      throw invalid(`parameter 'sequence_id' must be an unsigned 64-bit integer or a string, got ${raw}`);
    id = BigInt(raw);
  } else if (raw === undefined) {
    id = 0n;
  } else {
    throw invalid(`parameter 'sequence_id' must be an unsigned 64-bit integer or a string, got ${JSON.stringify(raw)}`);
  }
  if (typeof id === "bigint" && (id < 0n || id > MAX_UINT64))
    throw invalid(`parameter 'sequence_id' must be an unsigned 64-bit integer or a string, got ${id}`);
  if (id === 0n || id === "")
    throw invalid(
      `inference request to model '${modelName}' must specify a non-zero or non-empty correlation ID (parameter 'sequence_id')`,
    );
  return {
    id,
    key: typeof id === "bigint" ? `u${id}` : `s${id}`,
    start: flag(parameters, "sequence_start"),
    end: flag(parameters, "sequence_end"),
  };
}

function flag(parameters: Parameters, name: string): boolean {
  const value = parameters[name];
  if (value === undefined) return false;
  if (typeof value !== "boolean")
    throw invalid(`parameter '${name}' must be a boolean, got ${JSON.stringify(String(value))}`);
  return value;
}

/** How a correlation id reads in messages: 42 or "abc". */
export function showSequenceId(id: bigint | string): string {
  return typeof id === "bigint" ? id.toString() : JSON.stringify(id);
}

/**
 * The control tensors of one request (one batch row): shape [1, 1] when
 * the model batches, [1] when not, as Triton feeds them.
 */
export function controlTensors(policy: SequencePolicy, flags: SequenceFlags): Tensor[] {
  const shape = policy.maxBatchSize > 0 ? [1, 1] : [1];
  return policy.controls.map((control) => {
    if (control.kind === "CORRID")
      return { name: control.name, datatype: control.datatype, shape, data: corrId(control, flags) };
    const on = control.kind === "START" ? flags.start : control.kind === "END" ? flags.end : true;
    const value = control.falseTrue![on ? 1 : 0]!;
    return { name: control.name, datatype: control.datatype, shape, data: scalar(control.datatype, value) };
  });
}

function corrId(control: ControlSpec, flags: SequenceFlags): Buffer {
  if (control.datatype === "BYTES") {
    const text = Buffer.from(typeof flags.id === "string" ? flags.id : flags.id.toString());
    const data = Buffer.alloc(4 + text.length);
    data.writeUInt32LE(text.length, 0);
    text.copy(data, 4);
    return data;
  }
  if (typeof flags.id === "string")
    throw invalid(
      `control input '${control.name}' is CONTROL_SEQUENCE_CORRID of ${control.datatype}: the model takes numeric correlation ids, got the string ${JSON.stringify(flags.id)}`,
    );
  const id = flags.id;
  const fits =
    control.datatype === "UINT64"
      ? true
      : control.datatype === "INT64"
        ? id < 1n << 63n
        : control.datatype === "UINT32"
          ? id < 1n << 32n
          : id < 1n << 31n;
  if (!fits) throw invalid(`correlation id ${id} does not fit control input '${control.name}' of ${control.datatype}`);
  const data = Buffer.alloc(elementByteSize(control.datatype)!);
  if (control.datatype === "UINT64") data.writeBigUInt64LE(id);
  else if (control.datatype === "INT64") data.writeBigInt64LE(id);
  else if (control.datatype === "UINT32") data.writeUInt32LE(Number(id));
  else data.writeInt32LE(Number(id));
  return data;
}

function scalar(datatype: DataType, value: number | boolean): Buffer {
  if (datatype === "BOOL") return Buffer.from([value === true || value === 1 ? 1 : 0]);
  const data = Buffer.alloc(4);
  if (datatype === "FP32") data.writeFloatLE(Number(value));
  else data.writeInt32LE(Number(value));
  return data;
}

function invalid(message: string): OperonError {
  return new OperonError("INVALID_ARG", message);
}
