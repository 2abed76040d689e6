import { describe, expect, it } from "vitest";
import { parseServerAddress } from "./inference-client.js";

describe("-u server addresses", () => {
  it("takes host:port, URLs, IPv6 and default ports", () => {
    expect(parseServerAddress("localhost:8000", "http")).toEqual({
      host: "localhost",
      port: 8000,
      target: "localhost:8000",
    });
    expect(parseServerAddress("http://127.0.0.1:9000/", "http")).toEqual({
      host: "127.0.0.1",
      port: 9000,
      target: "127.0.0.1:9000",
    });
    expect(parseServerAddress("[::1]:8001", "grpc")).toEqual({ host: "::1", port: 8001, target: "[::1]:8001" });
    expect(parseServerAddress("grpc://example.com", "grpc")).toEqual({
      host: "example.com",
      port: 8001,
      target: "example.com:8001",
    });
    expect(parseServerAddress("example.com", "http").port).toBe(8000);
  });

  it.each([
    "https://localhost:8000",
    "localhost:8000/v2",
    "user:pw@localhost:8000",
    "local host:80",
    "localhost:99999",
  ])("refuses %j", (url) => {
    expect(() => parseServerAddress(url, "http")).toThrow(/^-u '/);
  });
});
