import { describe, expect, it } from "vitest";
import { offencesIn as check } from "./check-source-rules.mjs";

describe("no-proto-by-path", () => {
  it("flags the proto folder opened by a relative path", () => {
    expect(check("a.ts", `const dir = new URL("../../protocol/proto", import.meta.url);`)).toEqual([
      expect.stringContaining("a.ts:1: no-proto-by-path"),
    ]);
    expect(check("a.ts", `join(root, 'packages/protocol/proto')`)).toHaveLength(1);
  });

  it("flags a file inside the proto folder (config-schema.ts opened model_config.proto so)", () => {
    const line = `const PROTO_PATH = fileURLToPath(new URL("../../protocol/proto/model_config.proto", import.meta.url));`;
    expect(check("packages/model-config/src/config-schema.ts", `// header\n${line}`)).toEqual([
      expect.stringContaining("packages/model-config/src/config-schema.ts:2: no-proto-by-path"),
    ]);
    expect(check("a.ts", "`./packages/protocol/proto/grpc_service.proto`")).toHaveLength(1);
  });

  it("leaves the package's own entry point and unrelated paths alone", () => {
    expect(check("a.ts", `import { PROTO_DIR } from "@operon/protocol/proto-dir";`)).toEqual([]);
    expect(check("a.ts", `join(PROTO_DIR, "model_config.proto")`)).toEqual([]);
    expect(check("a.ts", `"../protocol/prototype.ts"`)).toEqual([]);
  });
});
