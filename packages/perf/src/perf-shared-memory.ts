import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { InferenceClient, PerfSharedMemoryPlan, SharedMemoryWindow } from "./inference-client.js";

export type { PerfSharedMemoryPlan, SharedMemoryWindow };
import type { PreparedInputSet } from "./input-data.js";
import { PerfError, messageOf } from "./perf-error.js";

/**
 * perf_analyzer's `--shared-memory system`: the prepared inputs are written
 * once into a POSIX shared-memory object, the outputs get an object of
 * their own (--output-shared-memory-size bytes per output), both are
 * registered with the server's system shared-memory extension, and every
 * request names its windows instead of carrying bytes. Concurrent requests
 * share the output windows, as perf_analyzer's do: the figures are what is
 * measured, not the outputs.
 *
 * On Linux shm_open("/name") is the file /dev/shm/name, so the objects are
 * made with plain file writes (mode 0600) and removed with unlink.
 */

/** perf_analyzer's default --output-shared-memory-size. */
export const DEFAULT_OUTPUT_SHARED_MEMORY_BYTES = 100 * 1024;

const SHM_DIR = "/dev/shm";

export interface PerfSharedMemory {
  plan: PerfSharedMemoryPlan;
  /** Unregisters both regions and unlinks their objects; never throws. */
  release(): Promise<void>;
}

export async function setUpSystemSharedMemory(
  control: InferenceClient,
  inputSets: readonly PreparedInputSet[],
  outputNames: readonly string[],
  outputBytes: number,
): Promise<PerfSharedMemory> {
  if (!existsSync(SHM_DIR)) {
    throw new PerfError("BAD_OPTIONS", `--shared-memory system needs POSIX shared memory (${SHM_DIR}), absent here`);
  }
  const tag = `operon_perf_${process.pid}_${randomBytes(4).toString("hex")}`;
  const inputRegion = `${tag}_input`;
  const outputRegion = `${tag}_output`;
  const inputs: SharedMemoryWindow[][] = [];
  const chunks: Buffer[] = [];
  let offset = 0;
  for (const set of inputSets) {
    inputs.push(
      set.map((input) => {
        const window = { region: inputRegion, offset, byteSize: input.data.length };
        chunks.push(input.data);
        offset += input.data.length;
        return window;
      }),
    );
  }
  const outputs = outputNames.map((name, i) => ({
    name,
    region: outputRegion,
    offset: i * outputBytes,
    byteSize: outputBytes,
  }));
  const created: string[] = [];
  const registered: string[] = [];
  const release = async (): Promise<void> => {
    for (const region of registered) await control.unregisterSystemSharedMemory(region).catch(() => undefined);
    for (const file of created) await rm(join(SHM_DIR, file), { force: true }).catch(() => undefined);
  };
  try {
    // A region must hold at least one byte: a model without inputs still gets one.
    const objects: Array<[name: string, bytes: Buffer]> = [
      [inputRegion, offset > 0 ? Buffer.concat(chunks) : Buffer.alloc(1)],
      [outputRegion, Buffer.alloc(Math.max(1, outputs.length * outputBytes))],
    ];
    for (const [name, bytes] of objects) {
      await writeFile(join(SHM_DIR, name), bytes, { mode: 0o600, flag: "wx" });
      created.push(name);
      await control.registerSystemSharedMemory(name, `/${name}`, bytes.length);
      registered.push(name);
    }
  } catch (error) {
    await release();
    if (error instanceof PerfError) throw error;
    throw new PerfError("SERVER_ERROR", `cannot set up system shared memory: ${messageOf(error)}`, { cause: error });
  }
  return { plan: { inputs, outputs }, release };
}
