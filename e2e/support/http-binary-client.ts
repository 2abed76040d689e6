import type { DataType } from "@operon/protocol/datatypes";

/**
 * A minimal client for Triton's binary_tensor_data extension, as a Triton
 * HTTP client sends it: a JSON header, then each input's raw bytes; every
 * output asked back as binary.
 */
export interface BinaryInput {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Buffer;
}

export interface BinaryOutput {
  name: string;
  datatype: string;
  shape: number[];
  data: Buffer;
}

export async function inferBinary(
  httpUrl: string,
  model: string,
  inputs: BinaryInput[],
  options: { parameters?: Record<string, unknown>; signal?: AbortSignal; id?: string } = {},
): Promise<{ status: number; outputs: BinaryOutput[]; error?: string }> {
  const header = Buffer.from(
    JSON.stringify({
      ...(options.id !== undefined ? { id: options.id } : {}),
      parameters: { ...(options.parameters ?? {}), binary_data_output: true },
      inputs: inputs.map((input) => ({
        name: input.name,
        datatype: input.datatype,
        shape: input.shape,
        parameters: { binary_data_size: input.data.length },
      })),
    }),
  );
  const response = await fetch(`${httpUrl}/v2/models/${encodeURIComponent(model)}/infer`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
    body: Buffer.concat([header, ...inputs.map((input) => input.data)]),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
  const body = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200)
    return { status: response.status, outputs: [], error: (JSON.parse(body.toString()) as { error: string }).error };
  const headerLength = Number(response.headers.get("inference-header-content-length") ?? body.length);
  const json = JSON.parse(body.subarray(0, headerLength).toString()) as {
    outputs: Array<{ name: string; datatype: string; shape: number[]; parameters?: { binary_data_size?: number } }>;
  };
  let offset = headerLength;
  const outputs = json.outputs.map((output) => {
    const size = output.parameters?.binary_data_size ?? 0;
    const data = body.subarray(offset, offset + size);
    offset += size;
    return { name: output.name, datatype: output.datatype, shape: output.shape, data };
  });
  return { status: response.status, outputs };
}

export function float32Buffer(values: ArrayLike<number> | number, length?: number): Buffer {
  const array = typeof values === "number" ? new Float32Array(length ?? 1).fill(values) : Float32Array.from(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

/** Triton's statistics for one model version. */
export async function modelStats(
  httpUrl: string,
  model: string,
): Promise<{
  inference_count: number;
  execution_count: number;
  inference_stats: Record<string, { count: number; ns: number }>;
  batch_stats: Array<{ batch_size: number; compute_infer: { count: number; ns: number } }>;
}> {
  const response = await fetch(`${httpUrl}/v2/models/${encodeURIComponent(model)}/stats`);
  const body = (await response.json()) as { model_stats: Array<never> };
  return body.model_stats[0]!;
}
