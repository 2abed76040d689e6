import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/**
 * The one loader of Operon's NVML reader (build/Release/operon_nvml.node,
 * built with the other addons; see nvml.cc): the GPU readings behind Triton's
 * nv_gpu_* metrics, from NVIDIA's management library loaded at run time.
 * Lazy: nothing loads until the first loadNvml(), and the result is kept for
 * the process.
 *
 *   OPERON_NATIVE=0           kill switch: no GPU metrics
 *   OPERON_NVML_LIB=<file>    load that library instead of libnvidia-ml.so.1
 *                             (found by the dynamic loader, as CUDA tools do)
 *
 * There is no fallback: without the driver's library (every host without an
 * NVIDIA GPU) there are no GPU readings, and loadNvml() says why.
 */

export const NVML_ADDON_PATH = fileURLToPath(new URL("../build/Release/operon_nvml.node", import.meta.url));
/** The soname the NVIDIA driver installs. */
export const DEFAULT_NVML_LIBRARY = "libnvidia-ml.so.1";

/** One device's readings in Triton's units; null = the device does not report it (NVML_ERROR_NOT_SUPPORTED). */
export interface GpuDeviceSample {
  /** NVML's index (the driver's order, not CUDA_VISIBLE_DEVICES'). */
  index: number;
  /** GPU-xxxxxxxx-…, the label Triton's GPU metrics carry (gpu_uuid). */
  uuid: string;
  /** Share of the last sample period the GPU ran a kernel, 0..1. */
  utilization: number | null;
  memoryTotalBytes: number | null;
  memoryUsedBytes: number | null;
  powerUsageWatts: number | null;
  powerLimitWatts: number | null;
  /** Energy since the driver loaded, joules. */
  energyJoules: number | null;
}

export interface NvmlReader {
  readonly libraryPath: string;
  /** Devices NVML saw at open. */
  readonly deviceCount: number;
  /**
   * Reads every device on a thread of its own (never on the event loop, nor on libuv's pool). A
   * pending reading does not keep the process alive, and a hung driver does not hold its exit.
   */
  sample(): Promise<GpuDeviceSample[]>;
  /** nvmlShutdown; idempotent; skipped (NVML left open) while a reading is in progress. */
  close(): void;
}

interface NvmlBinding {
  open(libraryPath: string): { deviceCount: number };
  sample(): Promise<GpuDeviceSample[]>;
  close(): void;
}

/** Opens NVML from libraryPath through the addon at addonPath (no caching, no kill switch); throws an Error saying why it cannot. */
export function openNvml(libraryPath: string = DEFAULT_NVML_LIBRARY, addonPath: string = NVML_ADDON_PATH): NvmlReader {
  const binding = createRequire(import.meta.url)(addonPath) as Partial<NvmlBinding>;
  for (const fn of ["open", "sample", "close"] as const) {
    if (typeof binding[fn] !== "function") throw new Error(`${addonPath} is not Operon's NVML addon (no ${fn}())`);
  }
  const native = binding as NvmlBinding;
  const { deviceCount } = native.open(libraryPath);
  let closed = false;
  return {
    libraryPath,
    deviceCount,
    sample: () => (closed ? Promise.reject(new Error("NVML is closed")) : native.sample()),
    close: () => {
      if (closed) return;
      closed = true;
      native.close();
    },
  };
}

export type NvmlLoad = { reader: NvmlReader; reason?: undefined } | { reader?: undefined; reason: string };

let loaded: NvmlLoad | undefined;

/** The process's NVML reader, or why there is none (no driver library, NVML failed to start, no device, disabled). */
export function loadNvml(): NvmlLoad {
  if (loaded !== undefined) return loaded;
  if (process.env.OPERON_NATIVE === "0") {
    loaded = { reason: "disabled by OPERON_NATIVE=0" };
    return loaded;
  }
  const override = process.env.OPERON_NVML_LIB;
  const libraryPath = override !== undefined && override !== "" ? override : DEFAULT_NVML_LIBRARY;
  try {
    const reader = openNvml(libraryPath);
    if (reader.deviceCount === 0) {
      reader.close();
      loaded = { reason: `NVML (${libraryPath}) reports no GPU` };
    } else loaded = { reader };
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0]! : String(error);
    loaded = { reason: message };
  }
  return loaded;
}
