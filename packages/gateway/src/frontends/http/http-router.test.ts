import { describe, expect, it } from "vitest";
import { Router } from "./http-router.js";

const router = new Router<string>()
  .add("GET", "/v2/models/stats", "all stats")
  .add("GET", "/v2/models/:model", "metadata")
  .add("POST", "/v2/models/:model/infer", "infer")
  .add("POST", "/v2/models/:model/versions/:version/infer", "infer version")
  .add("GET", "/v2/models/:model/stats", "stats");

describe("Router", () => {
  it("matches parameters, percent-decoded, and only routes of the path's length", () => {
    expect(router.match("POST", "/v2/models/add_sub/infer")).toEqual({
      kind: "found",
      handler: "infer",
      params: { model: "add_sub" },
    });
    expect(router.match("POST", "/v2/models/a%2Fb/versions/2/infer")).toEqual({
      kind: "found",
      handler: "infer version",
      params: { model: "a/b", version: "2" },
    });
  });

  it("lets a literal route added first shadow a parameter route", () => {
    expect(router.match("GET", "/v2/models/stats")).toMatchObject({ kind: "found", handler: "all stats" });
    expect(router.match("GET", "/v2/models/other")).toMatchObject({ kind: "found", params: { model: "other" } });
  });

  it("answers method-not-allowed with every method the path has, and not-found for an unknown path", () => {
    expect(router.match("GET", "/v2/models/m/infer")).toEqual({ kind: "method-not-allowed", allowed: ["POST"] });
    expect(router.match("DELETE", "/v2/models/stats")).toEqual({ kind: "method-not-allowed", allowed: ["GET"] });
    expect(router.match("POST", "/v2/nothing/here/at/all/x/y")).toEqual({ kind: "not-found" });
    // An empty parameter segment is no match.
    expect(router.match("POST", "/v2/models//infer")).toEqual({ kind: "not-found" });
  });

  it("refuses malformed percent-encoding in a parameter, naming the segment", () => {
    expect(() => router.match("POST", "/v2/models/bad%zz/infer")).toThrow(
      "malformed percent-encoding in the model path segment 'bad%zz'",
    );
  });
});
