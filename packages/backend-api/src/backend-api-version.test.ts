import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import {
  BACKEND_API_VERSION,
  assertModelBackendApi,
  formatBackendApiVersion,
  isCompatibleBackendApi,
} from "./backend-api-version.js";

const server = { major: 1, minor: 2 };

describe("backend API versions", () => {
  it("is 1.0 now", () => {
    expect(BACKEND_API_VERSION).toEqual({ major: 1, minor: 0 });
    expect(formatBackendApiVersion(BACKEND_API_VERSION)).toBe("1.0");
  });

  it("accepts the same major with an older or equal minor", () => {
    expect(isCompatibleBackendApi({ major: 1, minor: 0 }, server)).toBe(true);
    expect(isCompatibleBackendApi({ major: 1, minor: 2 }, server)).toBe(true);
    expect(isCompatibleBackendApi({ major: 1, minor: 3 }, server)).toBe(false);
    expect(isCompatibleBackendApi({ major: 0, minor: 9 }, server)).toBe(false);
    expect(isCompatibleBackendApi({ major: 2, minor: 0 }, server)).toBe(false);
  });

  it("takes a model that declares nothing as written for the server's version", () => {
    expect(() => assertModelBackendApi(undefined, "model file 'm.ts'", server)).not.toThrow();
    expect(() => assertModelBackendApi({ major: 1, minor: 1 }, "model file 'm.ts'", server)).not.toThrow();
  });

  it("refuses another major with INVALID_ARG naming both versions", () => {
    const error = catching(() => assertModelBackendApi({ major: 2, minor: 0 }, "model file 'm.ts'", server));
    expect(error.kind).toBe("INVALID_ARG");
    expect(error.message).toBe(
      "model file 'm.ts' was written for backend API 2.0, but this server provides backend API 1.2 (the major versions differ; a model loads when the major versions match and its minor is at most the server's)",
    );
  });

  it("refuses a newer minor", () => {
    expect(catching(() => assertModelBackendApi({ major: 1, minor: 3 }, "model file 'm.ts'", server)).message).toMatch(
      /written for backend API 1\.3, but this server provides backend API 1\.2 \(it may use what/,
    );
  });

  it("refuses a malformed declaration", () => {
    for (const declared of [1, "1.0", { major: 1 }, { major: -1, minor: 0 }, { major: 1.5, minor: 0 }, null]) {
      const error = catching(() => assertModelBackendApi(declared, "model file 'm.ts'", server));
      expect(error.kind).toBe("INVALID_ARG");
      expect(error.message).toMatch(/^model file 'm\.ts': operonBackendApi must be \{ major, minor \}/);
    }
  });
});

function catching(run: () => void): OperonError {
  try {
    run();
  } catch (error) {
    if (error instanceof OperonError) return error;
    throw error;
  }
  throw new Error("expected a throw");
}
