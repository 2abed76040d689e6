import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { withoutServerPaths } from "./client-text.js";
import { requestFailureOf } from "./failure-log.js";
import { OperonError } from "@operon/protocol/errors";

// Finding 16: error messages revealed server paths.

describe("client-facing error text", () => {
  it("replaces server paths by their last segment, leaving URL paths alone", () => {
    const dir = `${tmpdir()}/operon-repo/models`;
    expect(
      withoutServerPaths(
        `failed to load 'x': no model folder of that name in the model repositories (${dir}, /usr/share/models)`,
      ),
    ).toBe(
      "failed to load 'x': no model folder of that name in the model repositories (<server path>/models, <server path>/models)",
    );
    expect(withoutServerPaths("no endpoint at '/v2/models/x/nope'")).toBe("no endpoint at '/v2/models/x/nope'");
    expect(withoutServerPaths("see http://host/tmp/x")).toBe("see http://host/tmp/x");
  });

  it("scrubs file:// URLs (a model's import.meta.url, ES module stack frames) like bare paths (issue 29.3)", () => {
    expect(withoutServerPaths("model failed at file:///opt/operon/data/uploaded-models/m/1/model.js:12:5")).toBe(
      "model failed at <server path>/model.js:12:5",
    );
    expect(withoutServerPaths("at run (file:///srv/x/my%20model.ts:3:1)")).toBe(
      "at run (<server path>/my model.ts:3:1)",
    );
    expect(withoutServerPaths("from FILE://localhost/weird-root/a/b.mjs and file:/etc/passwd")).toBe(
      "from <server path>/b.mjs and <server path>/passwd",
    );
    expect(withoutServerPaths("see https://example.com/file://x")).toBe("see https://example.com/file://x");
  });

  it("is applied to every failure a frontend reports", () => {
    const failure = requestFailureOf(
      new OperonError("NOT_FOUND", `model file '1/model.onnx' not found in ${tmpdir()}/secret-layout/m`),
    );
    expect(failure.message).toBe("model file '1/model.onnx' not found in <server path>/m");
  });
});
