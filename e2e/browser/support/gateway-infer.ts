/**
 * One inference on the example add_sub model over the gateway's KServe v2
 * HTTP API, as a client program with an API key sends it.
 */
export const ADD_SUB_INPUT0 = Array.from({ length: 16 }, (_, index) => index);
export const ADD_SUB_INPUT1 = Array.from({ length: 16 }, () => 1);

export async function inferAddSub(httpUrl: string, apiKey: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${httpUrl}/v2/models/add_sub/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "FP32", data: ADD_SUB_INPUT0 },
        { name: "INPUT1", shape: [1, 16], datatype: "FP32", data: ADD_SUB_INPUT1 },
      ],
    }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the assertion message
  }
  return { status: response.status, body };
}

/**
 * Repeats the inference until it answers `status` or `timeoutMs` passes:
 * the control plane pushes key changes to the gateway, which may take a moment.
 */
export async function inferAddSubUntil(
  httpUrl: string,
  apiKey: string,
  status: number,
  timeoutMs = 10_000,
): Promise<{ status: number; body: unknown }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await inferAddSub(httpUrl, apiKey);
    if (result.status === status || Date.now() >= deadline) return result;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * One inference on the example text_direction operator (a Triton ensemble of two TypeScript steps in worker
 * processes and an ONNX classifier): a PNG as a BYTES element, sent as Triton's binary tensor data with an API key.
 */
export async function inferTextDirection(httpUrl: string, apiKey: string, png: Buffer): Promise<number> {
  const element = Buffer.alloc(4 + png.length);
  element.writeUInt32LE(png.length, 0);
  png.copy(element, 4);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: element.length } }],
    }),
  );
  const response = await fetch(`${httpUrl}/v2/models/text_direction/infer`, {
    method: "POST",
    headers: {
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(header.length),
      authorization: `Bearer ${apiKey}`,
    },
    body: Buffer.concat([header, element]),
  });
  await response.arrayBuffer();
  return response.status;
}
