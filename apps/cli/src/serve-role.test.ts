import { describe, expect, it } from "vitest";
import { serveRoleOf, withModelStore } from "./serve-role.js";

const POSTGRES = "postgresql://operon@db.example.internal:5432/operon";

describe("serveRoleOf", () => {
  it("all: the control plane as --control-plane says, nothing shared", () => {
    expect(serveRoleOf({ role: "all", controlPlane: true }, "file:.operon/db")).toEqual({
      name: "all",
      controlPlane: true,
      sharedKeysUrl: undefined,
    });
    expect(serveRoleOf({ role: "all", controlPlane: false }, "file:.operon/db").controlPlane).toBe(false);
  });

  it("gateway: no control plane, keys from the database", () => {
    expect(serveRoleOf({ role: "gateway", controlPlane: true }, POSTGRES)).toEqual({
      name: "gateway",
      controlPlane: false,
      sharedKeysUrl: POSTGRES,
    });
  });

  it("control-plane: the control plane, and it cannot be turned off", () => {
    expect(serveRoleOf({ role: "control-plane", controlPlane: true }, POSTGRES).controlPlane).toBe(true);
    expect(() => serveRoleOf({ role: "control-plane", controlPlane: false }, POSTGRES)).toThrow(
      /--role control-plane runs the control plane: drop --control-plane=false/,
    );
  });

  it("both cluster roles refuse the embedded database, naming the flag", () => {
    for (const role of ["gateway", "control-plane"] as const) {
      expect(() => serveRoleOf({ role, controlPlane: true }, "file:.operon/db")).toThrow(
        new RegExp(`--role ${role} needs PostgreSQL \\(--database-url`),
      );
    }
  });
});

describe("withModelStore", () => {
  it("adds the store after the repositories, once", () => {
    expect(withModelStore(["/models"], "/var/lib/operon/models")).toEqual(["/models", "/var/lib/operon/models"]);
    expect(withModelStore(["/models"], "/models/")).toEqual(["/models"]);
    expect(withModelStore(["/models"], undefined)).toEqual(["/models"]);
  });
});
