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

  it("answers a path it matched before from memory, the same match, its params frozen", () => {
    const own = new Router<string>().add("POST", "/v2/models/:model/infer", "infer");
    const first = own.match("POST", "/v2/models/m1/infer");
    const again = own.match("POST", "/v2/models/m1/infer");
    expect(again).toBe(first);
    expect(Object.isFrozen(again.kind === "found" && again.params)).toBe(true);
    // Another method or path is its own match; a route added later is seen.
    expect(own.match("GET", "/v2/models/m1/infer")).toEqual({ kind: "method-not-allowed", allowed: ["POST"] });
    own.add("GET", "/v2/models/:model/infer", "infer by GET");
    expect(own.match("GET", "/v2/models/m1/infer")).toMatchObject({ kind: "found", handler: "infer by GET" });
    expect(own.match("POST", "/v2/models/m2/infer")).toMatchObject({ params: { model: "m2" } });
  });

  it("stays correct past its memory's bounds: endless distinct paths, and very long ones", () => {
    const own = new Router<string>().add("POST", "/v2/models/:model/infer", "infer");
    let most = 0;
    for (let i = 0; i < 10_000; i += 1) {
      expect(own.match("POST", `/v2/models/m${i}/infer`)).toMatchObject({ params: { model: `m${i}` } });
      most = Math.max(most, own.rememberedPaths);
    }
    expect(most).toBe(4096);
    const before = own.rememberedPaths;
    const long = "x".repeat(10_000);
    expect(own.match("POST", `/v2/models/${long}/infer`)).toMatchObject({ params: { model: long } });
    expect(own.rememberedPaths).toBe(before);
    // A path no route has is never remembered.
    own.match("POST", "/nowhere");
    expect(own.rememberedPaths).toBe(before);
    expect(own.match("POST", "/v2/models/m1/infer")).toMatchObject({ params: { model: "m1" } });
  });
});
