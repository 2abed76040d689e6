import { describe, expect, it } from "vitest";
import { parseBackendConfig } from "./backend-config-flag.js";

describe("--backend-config", () => {
  it("gathers <backend>,<key>=<value> settings per backend over repeated flags", () => {
    let config = parseBackendConfig("operon_identity,greeting=hi", undefined);
    config = parseBackendConfig("operon_identity,threads=2", config);
    config = parseBackendConfig("other,url=a=b,c", config);
    expect(config).toEqual({ operon_identity: { greeting: "hi", threads: "2" }, other: { url: "a=b,c" } });
  });

  it("refuses a value without a backend name or without key=value, naming the syntax", () => {
    expect(() => parseBackendConfig("default-max-batch-size=8", undefined)).toThrow(/'<backend>,<key>=<value>'/);
    expect(() => parseBackendConfig("operon_identity,novalue", undefined)).toThrow(/is not a <key>=<value> setting/);
    expect(() => parseBackendConfig(",a=b", undefined)).toThrow(/'<backend>,<key>=<value>'/);
  });
});
