import { OperonError } from "@operon/protocol/errors";
import type { SystemSharedMemory } from "../shared-memory/system-shared-memory.js";
import { expectObject } from "./http-json-fields.js";
import { checkLocalPeer } from "../shared-memory/local-peer.js";

/**
 * The shared-memory extension's HTTP routes (extension_shared_memory.md):
 * v2/systemsharedmemory[/region/<name>]/status, .../register and
 * .../unregister. The v2/cudasharedmemory routes answer UNSUPPORTED (501):
 * this server registers no device memory yet.
 */

/** What a route handler gets: the region name from the path (if any), the caller, the JSON body on demand. */
export interface SharedMemoryRouteContext {
  region: string | undefined;
  owner: string | null;
  /** The client's address: registration is taken from this host only. */
  peer: string | undefined;
  readJson: () => Promise<unknown>;
}

/** [method, path, handler] rows; the handler returns the JSON to send (undefined = 200 with no body). */
export type SharedMemoryRoute = [
  method: string,
  path: string,
  handler: (context: SharedMemoryRouteContext) => Promise<unknown>,
];

export function sharedMemoryRoutes(shm: SystemSharedMemory): SharedMemoryRoute[] {
  const system = "/v2/systemsharedmemory";
  const routes: SharedMemoryRoute[] = [
    ["GET", `${system}/status`, async ({ owner }) => shm.status(undefined, owner)],
    ["GET", `${system}/region/:region/status`, async ({ region, owner }) => shm.status(region, owner)],
    [
      "POST",
      `${system}/region/:region/register`,
      async ({ region, owner, peer, readJson }) => {
        checkLocalPeer(peer);
        const body = expectObject(await readJson(), "register request body");
        await shm.register(region!, body["key"], body["offset"] ?? 0, body["byte_size"], owner);
        return undefined;
      },
    ],
    [
      "POST",
      `${system}/unregister`,
      async ({ owner, readJson }) => {
        await readJson();
        await shm.unregister(undefined, owner);
        return undefined;
      },
    ],
    [
      "POST",
      `${system}/region/:region/unregister`,
      async ({ region, owner, readJson }) => {
        await readJson();
        await shm.unregister(region, owner);
        return undefined;
      },
    ],
  ];
  const cuda = "/v2/cudasharedmemory";
  const unsupported = async (): Promise<never> => {
    throw new OperonError(
      "UNSUPPORTED",
      "CUDA shared memory is not supported: this server does not offer the 'cuda_shared_memory' extension; use system shared memory",
    );
  };
  for (const [method, path] of [
    ["GET", `${cuda}/status`],
    ["GET", `${cuda}/region/:region/status`],
    ["POST", `${cuda}/region/:region/register`],
    ["POST", `${cuda}/unregister`],
    ["POST", `${cuda}/region/:region/unregister`],
  ] as const) {
    routes.push([method, path, unsupported]);
  }
  return routes;
}
