import { spawnSync } from "node:child_process";
import {
  existsSync,
  ftruncateSync,
  openSync,
  closeSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  readFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { REPO_ROOT, startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * The system shared-memory extension through the real `operon serve`:
 * first the way Triton's Python client uses it (e2e/python/triton_shm_client_check.py:
 * shm_open + mmap, then the HTTP and gRPC APIs), then the hostile inputs a
 * client can send over HTTP, each of which must fail cleanly and leave the
 * server serving. Objects are made here as Linux makes shm_open's: files in
 * /dev/shm.
 */

const SHM_DIR = "/dev/shm";
let server: RunningOperon;
const created: string[] = [];

beforeAll(async () => {
  const repository = tempRepository("operon-e2e-shm-");
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  server = await startOperon(["--model-repository", repository]);
});

afterAll(async () => {
  for (const file of created) rmSync(join(SHM_DIR, file), { force: true });
  await server?.stop();
});

afterEach(async () => {
  await post("/v2/systemsharedmemory/unregister");
});

const url = (path: string): string => `${server.httpUrl}${path}`;

async function post(path: string, body?: unknown): Promise<{ status: number; body: { error?: string } | undefined }> {
  const response = await fetch(url(path), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? "" : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

/** A shared-memory object of `bytes` bytes (what shm_open + ftruncate make), holding `data` from its start. */
function shmObject(bytes: number, data?: Float32Array): { file: string; key: string } {
  const file = `operon_e2e_${process.pid}_${created.length}`;
  created.push(file);
  const fd = openSync(join(SHM_DIR, file), "w+", 0o600);
  ftruncateSync(fd, bytes);
  closeSync(fd);
  if (data !== undefined) {
    const all = Buffer.alloc(bytes);
    Buffer.from(data.buffer).copy(all);
    writeFileSync(join(SHM_DIR, file), all);
  }
  return { file, key: `/${file}` };
}

const shmParams = (region: string, byteSize: unknown, offset?: unknown) => ({
  shared_memory_region: region,
  shared_memory_byte_size: byteSize,
  ...(offset !== undefined ? { shared_memory_offset: offset } : {}),
});

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

function inferBody(inputOffsets: [unknown, unknown], byteSize: unknown = 64, region = "in") {
  return {
    inputs: [
      { name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: shmParams(region, byteSize, inputOffsets[0]) },
      { name: "INPUT1", datatype: "FP32", shape: [1, 16], parameters: shmParams(region, byteSize, inputOffsets[1]) },
    ],
  };
}

describe("Triton's Python client way (shm_open + mmap, HTTP and gRPC)", () => {
  function pythonWithGrpc(): string {
    const modules = "import grpc, grpc_tools, numpy, _posixshmem";
    const candidates = [process.env.OPERON_TEST_PYTHON, "/usr/bin/python3", "python3"].filter(
      (candidate): candidate is string =>
        candidate !== undefined && candidate !== "" && (!candidate.startsWith("/") || existsSync(candidate)),
    );
    for (const candidate of candidates) {
      if (spawnSync(candidate, ["-c", modules], { stdio: "ignore" }).status === 0) return candidate;
    }
    throw new Error(
      `no python3 with grpc, grpc_tools and numpy (tried ${candidates.join(", ")}); install them with ` +
        "`apt-get install -y python3-grpcio python3-grpc-tools python3-numpy` (.ci/run does) or set OPERON_TEST_PYTHON",
    );
  }

  it("registers, infers through regions, reports status, unregisters, and fails cleanly once the owner unlinks", () => {
    const script = join(REPO_ROOT, "e2e/python/triton_shm_client_check.py");
    const run = spawnSync(pythonWithGrpc(), [script, server.httpUrl, server.grpcAddress, "add_sub"], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status, `python client failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
    const { http, grpc } = result;
    expect(http.register_in).toBe(200);
    expect(http.register_out).toBe(200);
    expect(http.register_again[0]).toBe(400);
    expect(http.register_again[1].error).toMatch(/already registered/);
    expect(http.status[0]).toBe(200);
    expect(http.status[1].map((r: { name: string }) => r.name)).toEqual(["input_data", "output_data"]);
    expect(http.status[1][0]).toMatchObject({ offset: 0, byte_size: 128, key: expect.stringMatching(/^\/py_in_/) });
    expect(http.status_one[1]).toHaveLength(1);
    expect(http.infer_status).toBe(200);
    // Outputs in shared memory come back without their bytes, as Triton sends them.
    expect(http.infer_outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [1, 16] },
      { name: "OUTPUT1", datatype: "FP32", shape: [1, 16] },
    ]);
    expect(http.sum_matches).toBe(true);
    expect(http.diff_matches).toBe(true);
    expect(http.mixed_status).toBe(200);
    expect(http.mixed_sum).toEqual(range(16).map((v) => v + 0.25));
    expect(http.small_output[0]).toBe(400);
    expect(http.small_output[1].error).toMatch(/OUTPUT0.*64 bytes.*shared_memory_byte_size is 32/);
    expect(http.unregister_one).toBe(200);
    expect(http.after_unregister[0]).toBe(404);
    expect(http.after_unregister[1].error).toMatch(/unable to find system shared memory region: 'input_data'/);
    expect(http.unregister_all).toBe(200);
    expect(http.status_after).toEqual([200, []]);
    expect(http.register_then_unlink).toBe(200);
    expect(http.after_unlink[0]).toBe(503);
    expect(http.after_unlink[1].error).toMatch(/unlinked by its owner/);
    expect(http.cuda_register[0]).toBe(501);
    expect(http.cuda_register[1].error).toMatch(/CUDA shared memory is not supported/);

    expect(grpc.status.map((r: { name: string }) => r.name)).toEqual(["g_in", "g_out"]);
    expect(grpc.infer_outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [1, 16] },
      { name: "OUTPUT1", datatype: "FP32", shape: [1, 16] },
    ]);
    expect(grpc.raw_output_sizes).toEqual([0, 0]);
    expect(grpc.sum_matches).toBe(true);
    expect(grpc.diff_matches).toBe(true);
    expect(grpc.hostile_offset.code).toBe("INVALID_ARGUMENT");
    expect(grpc.hostile_offset.details).toMatch(/shared_memory_offset/);
    expect(grpc.hostile_register.code).toBe("INVALID_ARGUMENT");
    expect(grpc.cuda_register.code).toBe("UNIMPLEMENTED");
    expect(grpc.status_after).toBe(0);
  });
});

describe("hostile registrations", () => {
  it.each([
    ["a key that climbs out of /dev/shm", { key: "/../etc/passwd", byte_size: 16 }, /not a shared memory object name/],
    ["a key with a slash inside", { key: "/a/b", byte_size: 16 }, /not a shared memory object name/],
    ["a key that is not a string", { key: 7, byte_size: 16 }, /'key' must be a string/],
    ["an object that does not exist", { key: "/operon_e2e_missing", byte_size: 16 }, /does not exist/],
    ["Operon's own worker segments", { key: "/operon-1-x", byte_size: 16 }, /Operon's own segments/],
    ["a negative offset", { key: "/x", offset: -1, byte_size: 16 }, /offset must be a non-negative integer/],
    ["a fractional byte_size", { key: "/x", byte_size: 1.5 }, /byte_size must be a non-negative integer/],
    ["a byte_size past 2^53", { key: "/x", byte_size: 2 ** 60 }, /byte_size must be a non-negative integer/],
    ["a zero byte_size", { key: "/x", byte_size: 0 }, /byte_size must be greater than 0/],
  ])("refuses %s with 400", async (_what, body, message) => {
    const answer = await post("/v2/systemsharedmemory/region/bad/register", body);
    expect(answer.status).toBe(400);
    expect(answer.body?.error).toMatch(message);
  });

  it("refuses a region larger than its object", async () => {
    const { key } = shmObject(64);
    const answer = await post("/v2/systemsharedmemory/region/big/register", { key, offset: 32, byte_size: 64 });
    expect(answer.status).toBe(400);
    expect(answer.body?.error).toMatch(/offset 32 \+ byte_size 64 exceeds the 64 bytes/);
  });

  it("refuses a symbolic link planted in /dev/shm (it could point anywhere)", async () => {
    const link = `operon_e2e_link_${process.pid}`;
    created.push(link);
    rmSync(join(SHM_DIR, link), { force: true });
    symlinkSync("/etc/hostname", join(SHM_DIR, link));
    const answer = await post("/v2/systemsharedmemory/region/link/register", { key: `/${link}`, byte_size: 4 });
    expect(answer.status).toBe(400);
    expect(answer.body?.error).toMatch(/symbolic link/);
  });

  it("answers NOT_FOUND for the status of a region never registered", async () => {
    const response = await fetch(url("/v2/systemsharedmemory/region/nothing/status"));
    expect(response.status).toBe(404);
  });
});

describe("hostile tensor windows", () => {
  const a = new Float32Array(range(16));
  const b = new Float32Array(16).fill(1);

  async function registerInputs(): Promise<void> {
    const data = new Float32Array(32);
    data.set(a, 0);
    data.set(b, 16);
    const { key } = shmObject(128, data);
    expect((await post("/v2/systemsharedmemory/region/in/register", { key, byte_size: 128 })).status).toBe(200);
  }

  it("serves a correct request (the baseline the others break)", async () => {
    await registerInputs();
    const answer = await post("/v2/models/add_sub/infer", inferBody([0, 64]));
    expect(answer.status).toBe(200);
    const outputs = (answer.body as unknown as { outputs: Array<{ data: number[] }> }).outputs;
    expect(outputs[0]!.data).toEqual(range(16).map((v) => v + 1));
  });

  it.each([
    [
      "a window that ends past the region",
      [0, 96],
      64,
      400,
      /shared_memory_offset 96 \+ shared_memory_byte_size 64 exceeds the 128 bytes/,
    ],
    ["an offset of 2^53 - 1", [0, Number.MAX_SAFE_INTEGER], 64, 400, /exceeds the 128 bytes/],
    ["an offset past 2^53", [0, 2 ** 63], 64, 400, /shared_memory_offset must be a non-negative integer/],
    ["a negative offset", [-64, 64], 64, 400, /shared_memory_offset must be a non-negative integer/],
    [
      "a byte size that is not the tensor's",
      [0, 64],
      32,
      400,
      /shared_memory_byte_size is 32 but shape \[1,16\] of FP32 needs 64 bytes/,
    ],
    ["a byte size given as a string", [0, 64], "64", 400, /shared_memory_byte_size must be a non-negative integer/],
  ])("refuses %s", async (_what, offsets, byteSize, status, message) => {
    await registerInputs();
    const answer = await post("/v2/models/add_sub/infer", inferBody(offsets as [unknown, unknown], byteSize));
    expect(answer.status).toBe(status);
    expect(answer.body?.error).toMatch(message);
  });

  it("refuses an input with both data and a region", async () => {
    await registerInputs();
    const body = inferBody([0, 64]);
    (body.inputs[0] as Record<string, unknown>)["data"] = range(16);
    const answer = await post("/v2/models/add_sub/infer", body);
    expect(answer.status).toBe(400);
    expect(answer.body?.error).toMatch(/names a shared_memory_region and also carries data/);
  });

  it("refuses a region named without its byte size", async () => {
    await registerInputs();
    const body = inferBody([0, 64]);
    delete (body.inputs[1]!.parameters as Record<string, unknown>)["shared_memory_byte_size"];
    const answer = await post("/v2/models/add_sub/infer", body);
    expect(answer.status).toBe(400);
    expect(answer.body?.error).toMatch(/shared_memory_byte_size must be given/);
  });

  it("fails cleanly when the owner shrinks its object below the region, and serves again once it grows back", async () => {
    const data = new Float32Array(32);
    data.set(a, 0);
    data.set(b, 16);
    const { file, key } = shmObject(128, data);
    expect((await post("/v2/systemsharedmemory/region/in/register", { key, byte_size: 128 })).status).toBe(200);
    const path = join(SHM_DIR, file);
    const bytes = readFileSync(path);
    const fd = openSync(path, "r+");
    ftruncateSync(fd, 16);
    closeSync(fd);
    const answer = await post("/v2/models/add_sub/infer", inferBody([0, 64]));
    expect(answer.status).toBe(503);
    expect(answer.body?.error).toMatch(/shrank to 16 bytes, below the registered region/);
    writeFileSync(path, bytes);
    expect((await post("/v2/models/add_sub/infer", inferBody([0, 64]))).status).toBe(200);
  });

  it("still serves plain requests after all of these", async () => {
    const answer = await post("/v2/models/add_sub/infer", {
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: range(16) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: range(16) },
      ],
    });
    expect(answer.status).toBe(200);
  });
});
