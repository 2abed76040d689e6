/**
 * The perf-inputs form's values, parsed in the browser before the API sees
 * them (the API checks them again against the model): "3, 48, 320" -> [3,48,320],
 * and an uploaded file -> perf_analyzer's --input-data JSON.
 */
export type DimsResult = { ok: true; dims: number[] } | { ok: false; message: string };

/** Parses "3, 48, 320" (or "3x48x320") into whole numbers >= 1, as many as the input has dims. */
export function parseDims(text: string, rank: number): DimsResult {
  const parts = text
    .trim()
    .split(/\s*[,x×]\s*|\s+/)
    .filter((part) => part !== "");
  if (parts.length !== rank)
    return { ok: false, message: `give ${rank} ${rank === 1 ? "size" : "sizes"}, e.g. ${example(rank)}` };
  const dims: number[] = [];
  for (const part of parts) {
    if (!/^\d+$/.test(part) || Number(part) < 1)
      return { ok: false, message: `'${part}' is not a size (a whole number of at least 1)` };
    dims.push(Number(part));
  }
  return { ok: true, dims };
}

function example(rank: number): string {
  return Array.from({ length: rank }, (_, index) => (index === 0 ? "3" : "224")).join(", ");
}

/**
 * A raw file (an image, a text, an audio clip) as the one element of a BYTES
 * input: `{"data": [{"<input>": {"b64": "..."}}]}`, which the load generator
 * sends as that input in every request.
 */
export function bytesSampleJson(inputName: string, bytes: Uint8Array): string {
  return JSON.stringify({ data: [{ [inputName]: { b64: base64Of(bytes) } }] });
}

function base64Of(bytes: Uint8Array): string {
  let binary = "";
  const chunk = 0x8000;
  for (let offset = 0; offset < bytes.length; offset += chunk)
    binary += String.fromCharCode(...bytes.subarray(offset, offset + chunk));
  return btoa(binary);
}

/** "1.2 MiB", "35 KiB", "512 bytes". */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
  return `${bytes} bytes`;
}
