import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NATIVE_ADDON_PATH, loadNativeSharedMemory } from "./index.js";
import type { SharedMemoryApi, SharedMemoryError } from "./shared-memory-api.js";
import { createFallbackSharedMemory } from "./shared-memory-fallback.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const DIST_INDEX = pathToFileURL(path.join(ROOT, "native/dist/index.js")).href;
const run = promisify(execFile);

/** Every segment name here starts with this, so the leak check can find them. */
const PREFIX = `operon-test-${process.pid}-${randomBytes(3).toString("hex")}`;
let counter = 0;
const segmentName = (label = "s"): string => `/${PREFIX}-${label}-${(counter += 1)}`;

let native: SharedMemoryApi | undefined;
let nativeError: string | undefined;
try {
  native = loadNativeSharedMemory();
} catch (error) {
  nativeError = (error as Error).message.split("\n")[0];
}

// The addon is part of the product: its tests run, never skip. A machine
// that cannot build it fails here with the reason and the command to retry.
describe("the native shared-memory addon", () => {
  it("is built and loads", () => {
    expect(nativeError ?? "", `native addon not loadable; build it with: npm rebuild @operon/native`).toBe("");
    expect(native).toBeDefined();
  });
});

const implementations: Array<[string, SharedMemoryApi | undefined]> = [
  ["native", native],
  ["fallback", createFallbackSharedMemory()],
];

function thrown(fn: () => unknown): SharedMemoryError {
  try {
    fn();
  } catch (error) {
    return error as SharedMemoryError;
  }
  throw new Error("expected a throw");
}

beforeAll(() => {
  // The loader tests run dist/ in child processes: make sure it reflects the sources.
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "native"], {
    cwd: ROOT,
    stdio: "inherit",
  });
});

afterAll(() => {
  const leftovers = readdirSync("/dev/shm").filter((entry) => entry.startsWith(PREFIX));
  for (const entry of leftovers) native?.unlink(`/${entry}`);
  expect(leftovers).toEqual([]);
});

for (const [label, maybeApi] of implementations) {
  describe(`shared memory: ${label}`, () => {
    const api = maybeApi!;

    it("says what it is", () => {
      expect(api.kind).toBe(label);
      expect(api.shared).toBe(label === "native");
    });

    it("creates a zeroed segment that open() maps again: writes through one mapping show in the other", () => {
      const name = segmentName();
      const created = api.create(name, 10_000);
      expect(created).toBeInstanceOf(ArrayBuffer);
      expect(created.byteLength).toBe(10_000);
      const a = new Uint8Array(created);
      expect(a.every((byte) => byte === 0)).toBe(true);
      a[0] = 1;
      a[9_999] = 2;
      const opened = new Uint8Array(api.open(name, 10_000));
      expect([opened[0], opened[9_999]]).toEqual([1, 2]);
      opened[5] = 77;
      expect(a[5]).toBe(77);
      api.unlink(name);
    });

    it("refuses to create a name that exists (EEXIST), naming the call and the segment", () => {
      const name = segmentName();
      api.create(name, 64);
      const error = thrown(() => api.create(name, 64));
      expect(error.message).toBe(`shm_open('${name}') failed: File exists (EEXIST)`);
      expect(error).toMatchObject({ code: "EEXIST", errno: -17, syscall: "shm_open", path: name });
      api.unlink(name);
    });

    it("fails to open a missing segment (ENOENT) or more bytes than it has (EINVAL)", () => {
      const missing = segmentName("missing");
      const absent = thrown(() => api.open(missing, 64));
      expect(absent.message).toBe(`shm_open('${missing}') failed: No such file or directory (ENOENT)`);
      expect(absent).toMatchObject({ code: "ENOENT", path: missing });

      const name = segmentName();
      api.create(name, 4096);
      const tooBig = thrown(() => api.open(name, 4097));
      expect(tooBig.message).toBe(`open('${name}') failed: segment is 4096 bytes, cannot map 4097 (EINVAL)`);
      expect(tooBig.code).toBe("EINVAL");
      expect(new Uint8Array(api.open(name, 100))[0]).toBe(0);
      api.unlink(name);
    });

    it("unlink removes the name but not the memory already mapped; a second unlink is ENOENT", () => {
      const name = segmentName();
      const bytes = new Uint8Array(api.create(name, 256));
      bytes[3] = 9;
      api.unlink(name);
      expect(thrown(() => api.open(name, 256)).code).toBe("ENOENT");
      expect(bytes[3]).toBe(9);
      bytes[4] = 10;
      expect(bytes[4]).toBe(10);
      const again = thrown(() => api.unlink(name));
      expect(again.message).toBe(`shm_unlink('${name}') failed: No such file or directory (ENOENT)`);
      // The name is free again: a new, zeroed segment.
      const fresh = new Uint8Array(api.create(name, 256));
      expect(fresh[3]).toBe(0);
      api.unlink(name);
    });

    it("validates names and sizes", () => {
      for (const bad of ["", "/", "no-slash", "/a/b", `/${"x".repeat(255)}`]) {
        const error = thrown(() => api.create(bad, 64));
        expect(error.code).toBe("EINVAL");
        expect(error.message).toContain(`('${bad}')`);
      }
      expect(thrown(() => api.open("/a/b", 64)).message).toContain("open('/a/b') failed");
      expect(thrown(() => api.unlink("nope")).message).toContain("unlink('nope') failed");
      const name = segmentName();
      for (const size of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
        const error = thrown(() => api.create(name, size));
        expect(error).toBeInstanceOf(RangeError);
        expect(error.message).toContain(`create('${name}')`);
      }
      expect(thrown(() => api.create(name, "64" as unknown as number))).toBeInstanceOf(TypeError);
      expect(thrown(() => api.create(42 as unknown as string, 64))).toBeInstanceOf(TypeError);
      expect(thrown(() => api.open(name, 64)).code).toBe("ENOENT"); // nothing was created
    });

    it("close() unmaps now: views read as empty, the segment keeps its bytes, a second close is a no-op", () => {
      const name = segmentName();
      const buffer = api.create(name, 4096);
      const view = new Uint8Array(buffer, 100, 10);
      const whole = Buffer.from(buffer);
      view[0] = 42;
      api.close(buffer);
      expect(buffer.byteLength).toBe(0);
      expect(view.length).toBe(0);
      expect(whole.length).toBe(0);
      expect(view[0]).toBeUndefined();
      api.close(buffer);
      api.close(new ArrayBuffer(8)); // not ours: left alone
      expect(thrown(() => api.close("x" as unknown as ArrayBuffer))).toBeInstanceOf(TypeError);
      const reopened = new Uint8Array(api.open(name, 4096));
      expect(reopened[100]).toBe(42);
      api.unlink(name);
    });

    it("allocate() hands out private memory of exactly the size asked, reusable after collection", async () => {
      for (const size of [1, 4095, 4096, 602_112]) {
        const buffer = api.allocate(size);
        expect(buffer.byteLength).toBe(size);
        const bytes = new Uint8Array(buffer);
        bytes.fill(0xee);
        expect(bytes[size - 1]).toBe(0xee);
        api.close(buffer); // not a mapping: left alone
        expect(buffer.byteLength).toBe(size);
      }
      for (const bad of [0, -1, 1.5]) expect(() => api.allocate(bad)).toThrow(RangeError);
      expect(() => api.allocate("1" as unknown as number)).toThrow(TypeError);
      // Churn: collected buffers come back as new ones; contents are the caller's to set.
      for (let round = 0; round < 200; round += 1) {
        const buffer = new Uint8Array(api.allocate(100_000 + (round % 3)));
        buffer[round] = round & 0xff;
        expect(buffer[round]).toBe(round & 0xff);
      }
    });
  });
}

describe("native shared memory across processes", () => {
  it("a child process sees the parent's bytes and the parent sees the child's", async () => {
    const api = native!;
    const name = segmentName("xproc");
    const size = 1 << 20;
    const bytes = new Uint8Array(api.create(name, size));
    for (let i = 0; i < size; i += 4096) bytes[i] = (i / 4096) & 0xff;
    const child = `
      const addon = require(${JSON.stringify(NATIVE_ADDON_PATH)});
      const bytes = new Uint8Array(addon.open(${JSON.stringify(name)}, ${size}));
      for (let i = 0; i < ${size}; i += 4096) if (bytes[i] !== ((i / 4096) & 0xff)) throw new Error("mismatch at " + i);
      bytes.fill(0xab, 1, 4096);
      bytes[${size - 1}] = 0xcd;
      process.stdout.write("pid " + process.pid);
    `;
    const { stdout } = await run(process.execPath, ["-e", child]);
    expect(stdout).toMatch(/^pid \d+$/);
    // The child has exited; its writes live on in the parent's mapping.
    expect(bytes[1]).toBe(0xab);
    expect(bytes[4095]).toBe(0xab);
    expect(bytes[4096]).toBe(1);
    expect(bytes[size - 1]).toBe(0xcd);
    api.unlink(name);
    expect(readdirSync("/dev/shm")).not.toContain(name.slice(1));
  });

  it("the loader: addon by default, OPERON_NATIVE=0 kill switch, OPERON_NATIVE_PATH override", async () => {
    const probe = `import { sharedMemoryKind, sharedMemoryUnavailableReason, loadSharedMemory } from ${JSON.stringify(DIST_INDEX)};
      console.log(JSON.stringify({ kind: sharedMemoryKind(), shared: loadSharedMemory().shared, reason: sharedMemoryUnavailableReason() ?? null }));`;
    const load = async (
      env: Record<string, string>,
    ): Promise<{ kind: string; shared: boolean; reason: string | null }> => {
      const base = { ...process.env };
      delete base.OPERON_NATIVE;
      delete base.OPERON_NATIVE_PATH;
      const { stdout } = await run(process.execPath, ["--input-type=module", "-e", probe], {
        env: { ...base, ...env },
      });
      return JSON.parse(stdout);
    };
    expect(await load({})).toEqual({ kind: "native", shared: true, reason: null });
    expect(await load({ OPERON_NATIVE: "0" })).toEqual({
      kind: "fallback",
      shared: false,
      reason: "disabled by OPERON_NATIVE=0",
    });
    expect(await load({ OPERON_NATIVE_PATH: NATIVE_ADDON_PATH })).toEqual({
      kind: "native",
      shared: true,
      reason: null,
    });
    const missing = await load({ OPERON_NATIVE_PATH: "/nonexistent/operon_native.node" });
    expect(missing.kind).toBe("fallback");
    expect(missing.reason).toContain("cannot load the native addon /nonexistent/operon_native.node");
  });
});

describe("native and fallback parity on random operations", () => {
  it("give the same results and bytes for 2,000 random create/open/unlink/write/read steps", () => {
    let seed = 2024;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const apis = { native: native!, fallback: createFallbackSharedMemory() };
    type Mapping = { slot: number; bytes: Uint8Array };
    const state = {
      native: { mappings: [] as Mapping[], prefix: segmentName("parity-n") },
      fallback: { mappings: [] as Mapping[], prefix: segmentName("parity-f") },
    };
    const sizes = [1, 63, 64, 4096, 5000, 65_536];
    const slotSizes = new Map<number, number>();
    const seen = new Set<string>();
    const outcome = (fn: () => unknown): string => {
      try {
        const value = fn();
        return `ok ${value === undefined ? "" : String(value)}`;
      } catch (error) {
        return `err ${(error as SharedMemoryError).code ?? (error as Error).name}`;
      }
    };
    for (let step = 0; step < 2000; step += 1) {
      const op = random(5);
      const slot = random(6);
      const size = sizes[random(sizes.length)]!;
      const pick = random(1000);
      const offset = random(1 << 16);
      const value = random(256);
      const results: Record<string, string> = {};
      for (const which of ["native", "fallback"] as const) {
        const api = apis[which];
        const { mappings, prefix } = state[which];
        const name = `${prefix}-${slot}`;
        results[which] = outcome(() => {
          switch (op) {
            case 0: {
              const bytes = new Uint8Array(api.create(name, size));
              mappings.push({ slot, bytes });
              if (which === "fallback") slotSizes.set(slot, size);
              return bytes.length;
            }
            case 1: {
              // Map all of it: the fallback always hands out the whole segment.
              const full = slotSizes.get(slot) ?? size;
              const bytes = new Uint8Array(api.open(name, full));
              mappings.push({ slot, bytes });
              return bytes.length;
            }
            case 2:
              return api.unlink(name);
            case 3: {
              const mapping = mappings[pick % Math.max(1, mappings.length)];
              if (mapping === undefined) return "none";
              mapping.bytes[offset % mapping.bytes.length] = value;
              return `${mapping.slot}@${offset % mapping.bytes.length}`;
            }
            default: {
              const mapping = mappings[pick % Math.max(1, mappings.length)];
              if (mapping === undefined) return "none";
              let sum = 0;
              for (let i = 0; i < mapping.bytes.length; i += 1) sum = (sum * 31 + mapping.bytes[i]!) >>> 0;
              return `${mapping.slot}:${sum}`;
            }
          }
        });
      }
      seen.add(`${op} ${results.native!.split(" ")[0]}`);
      if (results.native !== results.fallback) {
        throw new Error(
          `step ${step} (op ${op}, slot ${slot}, size ${size}): native ${results.native}, fallback ${results.fallback}`,
        );
      }
    }
    // Every kind of step both succeeded and failed at some point (reads and writes only fail with no mapping).
    expect([...seen].sort()).toEqual(["0 err", "0 ok", "1 err", "1 ok", "2 err", "2 ok", "3 ok", "4 ok"]);
    for (const which of ["native", "fallback"] as const) {
      for (let slot = 0; slot < 6; slot += 1) {
        try {
          apis[which].unlink(`${state[which].prefix}-${slot}`);
        } catch {
          // not linked
        }
      }
    }
  });
});
