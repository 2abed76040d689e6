import { describe, expect, it } from "vitest";
import { clientSnippets } from "./client-snippets";

const KEY = "opk_abcdefgh_0123456789abcdefABCDEF-_0123456789";

describe("client lines for a new API key", () => {
  it("calls the gateway's statistics with the key, with curl and with tritonclient", () => {
    const lines = clientSnippets("http://127.0.0.1:8000", KEY);
    expect(lines.curl).toBe(`curl -H 'Authorization: Bearer ${KEY}' http://127.0.0.1:8000/v2/models/stats`);
    expect(lines.python).toBe(
      `python3 -c 'import tritonclient.http as t; print(t.InferenceServerClient("127.0.0.1:8000").get_inference_statistics(headers={"Authorization": "Bearer ${KEY}"}))'`,
    );
  });

  it("keeps https and tells tritonclient to use TLS", () => {
    const lines = clientSnippets("https://gateway.example.com/", KEY);
    expect(lines.curl).toContain(" https://gateway.example.com/v2/models/stats");
    expect(lines.python).toContain('InferenceServerClient("gateway.example.com", ssl=True)');
  });
});
