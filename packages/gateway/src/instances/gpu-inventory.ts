/**
 * Which NVIDIA GPUs this host can use, found without loading any GPU library
 * into the gateway: the kernel driver's control device `/dev/nvidiactl` must
 * exist, and the GPUs are the entries of `/proc/driver/nvidia/gpus/` (one
 * folder per GPU the driver bound; `/dev/nvidia<N>` device files when /proc
 * does not list them). CUDA_VISIBLE_DEVICES, when set, narrows them as CUDA
 * does (its entries count; an empty value hides every GPU).
 *
 * This is the gateway's refusal for KIND_GPU instances on a host without a
 * GPU; whether the driver is new enough for the CUDA runtime is the
 * backend's check (the CUDA backend reports cudaErrorInsufficientDriver by
 * name), since only code that loads CUDA can know.
 */
import { existsSync, readdirSync } from "node:fs";

export interface GpuInventory {
  /** GPUs usable by instances (ordinals 0..count-1). */
  count: number;
  /** Why there are none (or fewer than the driver has), for the refusal's message. */
  reason?: string;
}

export interface GpuProbePaths {
  nvidiactl?: string;
  procGpus?: string;
  dev?: string;
  visibleDevices?: string | undefined;
}

/** Probes the host (paths overridable for tests). */
export function probeGpus(paths: GpuProbePaths = {}): GpuInventory {
  const nvidiactl = paths.nvidiactl ?? "/dev/nvidiactl";
  const procGpus = paths.procGpus ?? "/proc/driver/nvidia/gpus";
  const dev = paths.dev ?? "/dev";
  const visible = "visibleDevices" in paths ? paths.visibleDevices : process.env["CUDA_VISIBLE_DEVICES"];
  // An empty CUDA_VISIBLE_DEVICES hides every GPU whatever the host has (as for CUDA itself), so a test or a
  // CPU-only deployment pins the inventory to none on any host.
  if (visible !== undefined && visible.trim() === "")
    return { count: 0, reason: "CUDA_VISIBLE_DEVICES is set and empty (every GPU hidden)" };
  if (!existsSync(nvidiactl))
    return { count: 0, reason: `no NVIDIA driver on this host (${nvidiactl} does not exist)` };
  let count = listSafe(procGpus).length;
  if (count === 0) count = listSafe(dev).filter((name) => /^nvidia\d+$/.test(name)).length;
  if (count === 0)
    return {
      count: 0,
      reason: `the NVIDIA driver lists no GPU (${procGpus} is empty and there is no ${dev}/nvidia<N>)`,
    };
  if (visible !== undefined) {
    const entries = visible
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== "");
    if (entries.length === 0) return { count: 0, reason: "CUDA_VISIBLE_DEVICES is set and empty (every GPU hidden)" };
    if (entries.length < count)
      return {
        count: entries.length,
        reason: `CUDA_VISIBLE_DEVICES=${visible} shows ${entries.length} of ${count} GPUs`,
      };
  }
  return { count };
}

/** This process's CUDA_VISIBLE_DEVICES (undefined: unset), the list CUDA ordinals index. */
export function cudaVisibleDevices(): string | undefined {
  return process.env["CUDA_VISIBLE_DEVICES"];
}

let cached: GpuInventory | undefined;

/**
 * Where the probe looks instead of `/` when set: a folder laid out like a host (`dev/nvidiactl`,
 * `proc/driver/nvidia/gpus/<one entry per GPU>`). System tests fake a GPU host with it (as OPERON_NVML_LIB
 * fakes its NVML); a KIND_GPU instance then loads only in a backend that declares it runs on a GPU.
 */
export const GPU_PROBE_ROOT_ENV = "OPERON_GPU_PROBE_ROOT";

/** The host's inventory, probed once per process. */
export function hostGpus(): GpuInventory {
  const root = process.env[GPU_PROBE_ROOT_ENV];
  cached ??= probeGpus(
    root === undefined || root === ""
      ? {}
      : { nvidiactl: `${root}/dev/nvidiactl`, procGpus: `${root}/proc/driver/nvidia/gpus`, dev: `${root}/dev` },
  );
  return cached;
}

function listSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
