/**
 * A model config being edited, in the API's JSON form (snake_case keys,
 * TYPE_* data types): the one value both the form fields and the JSON text
 * edit. Every helper returns a new object and keeps the fields it does not
 * know about, so whatever was written in the JSON survives the form.
 */
export type ConfigDraft = Record<string, unknown>;
export type TensorKind = "input" | "output";

export interface TensorDraft {
  name: string;
  data_type?: string;
  dims?: number[];
  [field: string]: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function tensorsOf(draft: ConfigDraft, kind: TensorKind): TensorDraft[] {
  const list = draft[kind];
  return Array.isArray(list)
    ? list.filter(isRecord).map((tensor) => ({ ...tensor, name: String(tensor.name ?? "") }))
    : [];
}

export function withTensor(
  draft: ConfigDraft,
  kind: TensorKind,
  index: number,
  change: Partial<TensorDraft>,
): ConfigDraft {
  const list = Array.isArray(draft[kind]) ? [...(draft[kind] as unknown[])] : [];
  list[index] = { ...(isRecord(list[index]) ? list[index] : {}), ...change };
  return { ...draft, [kind]: list };
}

export function numberOf(draft: ConfigDraft, key: string): number | undefined {
  const value = draft[key];
  return typeof value === "number" ? value : undefined;
}

/** Sets a top-level field; undefined removes it. */
export function withField(draft: ConfigDraft, key: string, value: unknown): ConfigDraft {
  const next = { ...draft };
  if (value === undefined) delete next[key];
  else next[key] = value;
  return next;
}

export interface DynamicBatchingDraft {
  enabled: boolean;
  maxQueueDelayUs: number | undefined;
}

export function dynamicBatchingOf(draft: ConfigDraft): DynamicBatchingDraft {
  const value = draft.dynamic_batching;
  if (!isRecord(value)) return { enabled: false, maxQueueDelayUs: undefined };
  const delay = value.max_queue_delay_microseconds;
  return { enabled: true, maxQueueDelayUs: typeof delay === "number" ? delay : undefined };
}

export function withDynamicBatching(draft: ConfigDraft, change: DynamicBatchingDraft): ConfigDraft {
  if (!change.enabled) return withField(draft, "dynamic_batching", undefined);
  const current = isRecord(draft.dynamic_batching) ? { ...draft.dynamic_batching } : {};
  if (change.maxQueueDelayUs === undefined) delete current.max_queue_delay_microseconds;
  else current.max_queue_delay_microseconds = change.maxQueueDelayUs;
  return { ...draft, dynamic_batching: current };
}

export interface InstanceGroupDraft {
  count: number | undefined;
  kind: string;
}

/** The first instance group (the form edits one; more are kept and edited in the JSON). */
export function instanceGroupOf(draft: ConfigDraft): InstanceGroupDraft & { groups: number } {
  const groups = Array.isArray(draft.instance_group) ? draft.instance_group : [];
  const first = isRecord(groups[0]) ? groups[0] : {};
  return {
    count: typeof first.count === "number" ? first.count : undefined,
    kind: typeof first.kind === "string" ? first.kind : "KIND_CPU",
    groups: groups.length,
  };
}

export function withInstanceGroup(draft: ConfigDraft, change: Partial<InstanceGroupDraft>): ConfigDraft {
  const groups = Array.isArray(draft.instance_group) ? [...(draft.instance_group as unknown[])] : [];
  const first: Record<string, unknown> = { ...(isRecord(groups[0]) ? groups[0] : {}) };
  if ("count" in change) {
    if (change.count === undefined) delete first.count;
    else first.count = change.count;
  }
  if (change.kind !== undefined) first.kind = change.kind;
  groups[0] = first;
  return { ...draft, instance_group: groups };
}

/** model-config's data type names; BYTES is TYPE_STRING. */
export const CONFIG_DATA_TYPES = [
  "TYPE_BOOL",
  "TYPE_UINT8",
  "TYPE_UINT16",
  "TYPE_UINT32",
  "TYPE_UINT64",
  "TYPE_INT8",
  "TYPE_INT16",
  "TYPE_INT32",
  "TYPE_INT64",
  "TYPE_FP16",
  "TYPE_FP32",
  "TYPE_FP64",
  "TYPE_STRING",
  "TYPE_BF16",
] as const;

export const INSTANCE_KINDS = [
  { value: "KIND_CPU", label: "CPU" },
  { value: "KIND_GPU", label: "GPU" },
  { value: "KIND_AUTO", label: "Auto (GPU when there is one)" },
] as const;
