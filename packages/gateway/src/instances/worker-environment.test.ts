import { describe, expect, it } from "vitest";
import { workerEnvironment } from "./worker-environment.js";

describe("workerEnvironment", () => {
  const parent = {
    PATH: "/usr/bin",
    HOME: "/root",
    LANG: "C.UTF-8",
    LC_ALL: "C",
    TZ: "UTC",
    OPERON_ADMIN_PASSWORD: "hunter2-hunter2",
    DATABASE_URL: "postgres://u:p@db/x",
    AWS_SECRET_ACCESS_KEY: "abc",
    NODE_OPTIONS: "--require /tmp/evil.js",
    OPERON_NATIVE: "0",
    OPERON_TRACE: "batcher",
    CUDA_VISIBLE_DEVICES: "2,3",
    CUDA_DEVICE_ORDER: "PCI_BUS_ID",
    OPERON_CUDA_DRIVER_LIB: "/opt/fake/libcuda.so.1",
  };

  it("keeps only the allow-listed variables", () => {
    expect(workerEnvironment(parent)).toEqual({
      PATH: "/usr/bin",
      HOME: "/root",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      TZ: "UTC",
      OPERON_NATIVE: "0",
      OPERON_TRACE: "batcher",
      // A worker's GPU ordinals mean what the gateway's mean (device 0 = the server's first visible GPU).
      CUDA_VISIBLE_DEVICES: "2,3",
      CUDA_DEVICE_ORDER: "PCI_BUS_ID",
      // The driver the worker's device pool loads must be the gateway's choice too (the GPU system tests' fake).
      OPERON_CUDA_DRIVER_LIB: "/opt/fake/libcuda.so.1",
    });
  });

  it("names the worker's own account when it runs as another user", () => {
    const env = workerEnvironment(parent, { uid: 65534, gid: 65534, name: "nobody", home: "/nonexistent" });
    expect(env).toMatchObject({ HOME: "/nonexistent", USER: "nobody", LOGNAME: "nobody" });
    expect(env.OPERON_ADMIN_PASSWORD).toBeUndefined();
  });
});
