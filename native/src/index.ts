import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { SharedMemoryApi } from "./shared-memory-api.js";
import { fallbackSharedMemory } from "./shared-memory-fallback.js";

export type { SharedMemoryApi, SharedMemoryError } from "./shared-memory-api.js";

/**
 * The one loader of Operon's N-API addon (build/Release/operon_native.node,
 * built by this package's install script). Lazy: nothing loads until the
 * first call, and the result is kept for the process.
 *
 *   OPERON_NATIVE=0           kill switch: always the pure-TS fallback
 *   OPERON_NATIVE_PATH=<file> load the addon from there instead
 *
 * When the addon cannot load (not built, wrong ABI, not Linux) the fallback
 * is returned and sharedMemoryUnavailableReason() says why. Callers check
 * `api.shared` rather than the kind: only shared memory may carry bytes
 * between processes.
 */

/** Where the install script leaves the addon (from src/ and dist/ alike). */
export const NATIVE_ADDON_PATH = fileURLToPath(new URL("../build/Release/operon_native.node", import.meta.url));

interface NativeBinding {
  create(name: string, byteLength: number): ArrayBuffer;
  open(name: string, byteLength: number): ArrayBuffer;
  unlink(name: string): void;
  close(buffer: ArrayBuffer): void;
  allocate(byteLength: number): ArrayBuffer;
}

let loaded: SharedMemoryApi | undefined;
let unavailableReason: string | undefined;

/** Loads the addon from addonPath (no caching, no kill switch); throws when it cannot. */
export function loadNativeSharedMemory(addonPath: string = NATIVE_ADDON_PATH): SharedMemoryApi {
  const binding = createRequire(import.meta.url)(addonPath) as Partial<NativeBinding>;
  for (const fn of ["create", "open", "unlink", "close", "allocate"] as const) {
    if (typeof binding[fn] !== "function")
      throw new Error(`${addonPath} is not Operon's shared-memory addon (no ${fn}())`);
  }
  const native = binding as NativeBinding;
  return {
    kind: "native",
    shared: true,
    create: (name, byteLength) => native.create(name, byteLength),
    open: (name, byteLength) => native.open(name, byteLength),
    unlink: (name) => native.unlink(name),
    close: (buffer) => native.close(buffer),
    allocate: (byteLength) => native.allocate(byteLength),
  };
}

/** The shared-memory implementation for this process: the addon, else the fallback. */
export function loadSharedMemory(): SharedMemoryApi {
  if (loaded !== undefined) return loaded;
  if (process.env.OPERON_NATIVE === "0") {
    unavailableReason = "disabled by OPERON_NATIVE=0";
    loaded = fallbackSharedMemory;
    return loaded;
  }
  const override = process.env.OPERON_NATIVE_PATH;
  const addonPath = override !== undefined && override !== "" ? override : NATIVE_ADDON_PATH;
  try {
    loaded = loadNativeSharedMemory(addonPath);
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    unavailableReason = `cannot load the native addon ${addonPath}: ${message}`;
    loaded = fallbackSharedMemory;
  }
  return loaded;
}

export function sharedMemoryKind(): "native" | "fallback" {
  return loadSharedMemory().kind;
}

/** Why loadSharedMemory() returned the fallback; undefined when it returned the addon. */
export function sharedMemoryUnavailableReason(): string | undefined {
  loadSharedMemory();
  return unavailableReason;
}
