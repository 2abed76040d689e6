import { describe, expect, it } from "vitest";
import { resolveWorkerUser } from "./worker-user.js";

describe("resolveWorkerUser", () => {
  it("resolves an account of the system's user database", () => {
    expect(resolveWorkerUser("nobody", 0)).toMatchObject({ name: "nobody", uid: 65534 });
  });

  it("refuses unknown accounts, root, and a server that is not root", () => {
    expect(() => resolveWorkerUser("no-such-user-operon", 0)).toThrow(/no such account/);
    expect(() => resolveWorkerUser("root", 0)).toThrow(/is root/);
    expect(() => resolveWorkerUser("nobody", 1000)).toThrow(/must run as root/);
  });
});
