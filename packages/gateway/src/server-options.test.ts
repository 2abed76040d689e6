import { describe, expect, it } from "vitest";
import { GATEWAY_DEFAULTS, resolveOperonServerOptions } from "./server-options.js";

const logger = { info: () => {}, warn: () => {}, error: () => {} } as never;

describe("gateway options", () => {
  it("fills in tritonserver's defaults and passes the logger through as it is", () => {
    const resolved = resolveOperonServerOptions({ modelRepositories: ["models"], workerEntry: "/worker.js", logger });
    expect(resolved).toMatchObject({ ...GATEWAY_DEFAULTS, loadModels: [], modelRepositories: ["models"] });
    expect(resolved.logger).toBe(logger);
    expect(resolved.cacheSizeBytes).toBeUndefined();
    expect(resolved.access).toBeUndefined();
  });

  it("keeps what is given and refuses values out of range", () => {
    expect(
      resolveOperonServerOptions({
        modelRepositories: [],
        workerEntry: "w",
        logger,
        httpPort: 0,
        modelControlMode: "explicit",
      }),
    ).toMatchObject({
      httpPort: 0,
      modelControlMode: "explicit",
    });
    expect(() =>
      resolveOperonServerOptions({ modelRepositories: [], workerEntry: "w", logger, grpcPort: 70000 }),
    ).toThrow();
    expect(() =>
      resolveOperonServerOptions({ modelRepositories: [], workerEntry: "w", logger, cacheSizeBytes: 0 }),
    ).toThrow();
  });
});
