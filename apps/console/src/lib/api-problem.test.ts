import { TRPCClientError } from "@trpc/client";
import { describe, expect, it } from "vitest";
import { apiProblem, fieldMessage, formMessage, isUnauthenticated } from "./api-problem";

function apiError(message: string, data: unknown): TRPCClientError<never> {
  return TRPCClientError.from({ error: { message, code: -32600, data } } as never);
}

describe("apiProblem", () => {
  it("reads the API's message, code and field errors", () => {
    const problem = apiProblem(
      apiError("invalid input: email: not an email address", {
        appCode: "VALIDATION_FAILED",
        fieldErrors: [{ path: "email", message: "not an email address" }],
      }),
    );
    expect(problem).toEqual({
      message: "invalid input: email: not an email address",
      appCode: "VALIDATION_FAILED",
      fieldErrors: [{ path: "email", message: "not an email address" }],
      retryAfterSecs: undefined,
    });
    expect(fieldMessage(problem, "email")).toBe("not an email address");
    expect(fieldMessage(problem, "password")).toBeUndefined();
  });

  it("keeps the rate limit's wait", () => {
    const problem = apiProblem(
      apiError("too many failed sign-ins; try again in 42 s", {
        appCode: "RATE_LIMITED",
        fieldErrors: [],
        retryAfterSecs: 42,
      }),
    );
    expect(problem.retryAfterSecs).toBe(42);
    expect(problem.message).toContain("try again in 42 s");
  });

  it("says the API is unreachable when the answer is not the API's", () => {
    const problem = apiProblem(new TRPCClientError("Unexpected token '<'"));
    expect(problem.appCode).toBeUndefined();
    expect(problem.message).toMatch(/could not reach the Operon API/);
  });

  it("recognises a lost session", () => {
    expect(isUnauthenticated(apiError("sign in first", { appCode: "UNAUTHENTICATED", fieldErrors: [] }))).toBe(true);
    expect(isUnauthenticated(apiError("no", { appCode: "FORBIDDEN", fieldErrors: [] }))).toBe(false);
    expect(isUnauthenticated(new Error("sign in first"))).toBe(false);
  });
});

describe("formMessage", () => {
  const atEmail = {
    message: "a user with email x exists",
    appCode: "CONFLICT",
    fieldErrors: [{ path: "email", message: "already in use" }],
    retryAfterSecs: undefined,
  };

  it("is silent when every problem is shown at a field of the form", () => {
    expect(formMessage(atEmail, ["email", "password"])).toBeUndefined();
  });

  it("shows the message when a problem has no field on the form, or none at all", () => {
    expect(formMessage(atEmail, ["password"])).toBe("a user with email x exists");
    expect(formMessage({ ...atEmail, fieldErrors: [] }, ["email"])).toBe("a user with email x exists");
    expect(formMessage(null, ["email"])).toBeUndefined();
  });
});
