import { availableParallelism, hostname, totalmem } from "node:os";

/** What the control plane can tell of the host it runs on (the gateway's host), to prefill its hardware profile. */
export interface HostFacts {
  hostname: string;
  /** Logical cores this process may use (os.availableParallelism). */
  cpuCores: number;
  memoryBytes: number;
}

export function hostFacts(): HostFacts {
  return { hostname: hostname(), cpuCores: availableParallelism(), memoryBytes: totalmem() };
}
