/**
 * Ready-made client lines for a new key: one call to the gateway's KServe v2
 * HTTP API (inference statistics, which any key with the infer scope may
 * read), with curl and with Triton's Python client. Keys are URL-safe
 * base64, so they need no quoting beyond the single quotes around the line.
 */
export interface ClientSnippets {
  curl: string;
  python: string;
}

export function clientSnippets(gatewayHttpUrl: string, key: string): ClientSnippets {
  const url = new URL(gatewayHttpUrl);
  const base = `${url.protocol}//${url.host}`;
  // tritonclient takes host:port without a scheme, and ssl=True for https.
  const ssl = url.protocol === "https:" ? ", ssl=True" : "";
  return {
    curl: `curl -H 'Authorization: Bearer ${key}' ${base}/v2/models/stats`,
    python: `python3 -c 'import tritonclient.http as t; print(t.InferenceServerClient("${url.host}"${ssl}).get_inference_statistics(headers={"Authorization": "Bearer ${key}"}))'`,
  };
}
