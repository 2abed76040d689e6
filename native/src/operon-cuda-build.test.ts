// operon_cuda's build and the half of its CUDA suite that needs no GPU, in
// `npm test`. With nvcc on this machine (NVCC, else nvcc on the PATH, else
// /usr/local/cuda/bin/nvcc: build-tritonserver.mjs's lookup), the backend
// must have been built and carry sm_90 machine code (H100/H200), and
// `operon-backend-host cuda-selftest <dir> --cpu-only` must pass every test
// (CPU references, weights files, config errors, refusals and their wording).
// A driver older than the runtime (a stand-in libcuda.so.1 reporting CUDA
// 12.0, native/test-fixtures/fake-old-libcuda.cc) is refused at instance
// load with "update the driver". Without nvcc, the build must have recorded why in
// backends/operon_cuda/UNAVAILABLE. The GPU half runs on a GPU host only
// (npm run device-check).
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BUILD = path.join(ROOT, "native/build/tritonserver");
const HOST = path.join(BUILD, "bin/operon-backend-host");
const CUDA_DIR = path.join(BUILD, "backends/operon_cuda");
const CUDA_LIB = path.join(CUDA_DIR, "libtriton_operon_cuda.so");
const run = promisify(execFile);

function hasNvcc(): boolean {
  return [process.env.NVCC, "nvcc", "/usr/local/cuda/bin/nvcc"]
    .filter((candidate): candidate is string => Boolean(candidate))
    .some((candidate) => spawnSync(candidate, ["--version"]).status === 0);
}

/** What the build wrote instead of the library, for the failure message. */
function unavailableReason(): string {
  const marker = path.join(CUDA_DIR, "UNAVAILABLE");
  return existsSync(marker) ? readFileSync(marker, "utf8").trim() : "no UNAVAILABLE marker either";
}

/** One image in a CUDA fat binary: kind "sass" (an sm_<arch> cubin) or "ptx", and its arch (90 for sm_90). */
interface FatbinImage {
  kind: "ptx" | "sass" | `kind ${number}`;
  arch: number;
}

/**
 * The images of a library's .nv_fatbin section (one fat binary per CUDA
 * translation unit): the header is magic 0xBA55ED50, u16 version, u16
 * header size, u64 payload size; each image has u16 kind (1 PTX, 2 ELF),
 * u16, u32 header size, u64 size, and its arch as a u32 at offset 28. Used
 * where CUDA's cuobjdump is not installed (nvcc's package here lacks it).
 */
function fatbinImages(section: Buffer): FatbinImage[] {
  const images: FatbinImage[] = [];
  let offset = 0;
  while (offset + 16 <= section.length) {
    if (section.readUInt32LE(offset) !== 0xba55ed50) throw new Error(`no fat binary magic at byte ${offset}`);
    const headerSize = section.readUInt16LE(offset + 6);
    const end = offset + headerSize + Number(section.readBigUInt64LE(offset + 8));
    for (let image = offset + headerSize; image < end; ) {
      const kind = section.readUInt16LE(image);
      images.push({
        kind: kind === 1 ? "ptx" : kind === 2 ? "sass" : `kind ${kind}`,
        arch: section.readUInt32LE(image + 28),
      });
      image += section.readUInt32LE(image + 4) + Number(section.readBigUInt64LE(image + 8));
    }
    offset = Math.ceil(end / 8) * 8;
  }
  return images;
}

/** The sm_<arch> machine code the library carries: cuobjdump --list-elf when installed, else its fat binaries. */
async function sassArchs(library: string): Promise<number[]> {
  if (spawnSync("cuobjdump", ["--version"]).status === 0) {
    const { stdout } = await run("cuobjdump", ["--list-elf", library]);
    return [...stdout.matchAll(/\bsm_(\d+)\b/g)].map((match) => Number(match[1]));
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "operon-fatbin-"));
  try {
    const section = path.join(dir, "nv_fatbin");
    await run("objcopy", ["-O", "binary", "--only-section=.nv_fatbin", library, section]);
    return fatbinImages(readFileSync(section))
      .filter((image) => image.kind === "sass")
      .map((image) => image.arch);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const nvcc = hasNvcc();

describe("operon_cuda build (native/backends/operon_cuda)", () => {
  if (nvcc) {
    it("is built, with sm_90 machine code, since nvcc is on this machine", async () => {
      expect(existsSync(CUDA_LIB), `libtriton_operon_cuda.so was not built: ${unavailableReason()}`).toBe(true);
      expect(existsSync(path.join(CUDA_DIR, "UNAVAILABLE"))).toBe(false);
      expect(await sassArchs(CUDA_LIB)).toContain(90);
    });

    it("passes every test of the CUDA suite's CPU half (cuda-selftest --cpu-only)", async () => {
      const { stdout } = await run(HOST, ["cuda-selftest", BUILD, "--cpu-only"], { timeout: 120_000 }).catch(
        (error: { stdout?: string; message: string }) => {
          throw new Error(`operon-backend-host cuda-selftest --cpu-only failed:\n${error.stdout ?? error.message}`);
        },
      );
      expect(stdout.split("\n").filter((line) => line.startsWith("not ok"))).toEqual([]);
      const summary = /^(\d+) passed, (\d+) failed$/m.exec(stdout);
      expect(summary, stdout).not.toBeNull();
      expect(Number(summary![1])).toBeGreaterThanOrEqual(9);
      expect(Number(summary![2])).toBe(0);
    }, 150_000);

    it("refuses a KIND_GPU instance when the driver is older than the runtime, saying to update the driver", async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), "operon-old-driver-"));
      try {
        await run("g++", [
          "-shared",
          "-fPIC",
          path.join(ROOT, "native/test-fixtures/fake-old-libcuda.cc"),
          "-o",
          path.join(dir, "libcuda.so.1"),
        ]);
        const config = JSON.stringify({
          name: "pre",
          backend: "operon_cuda",
          max_batch_size: 0,
          parameters: { operation: { string_value: "preprocess" } },
        });
        const args = [
          "run",
          "--name",
          "operon_cuda",
          "--library",
          CUDA_LIB,
          "--model-dir",
          dir,
          "--config",
          config,
          "--gpu",
          "0",
        ];
        const result = spawnSync(HOST, args, {
          encoding: "utf8",
          env: { ...process.env, LD_LIBRARY_PATH: dir },
          timeout: 60_000,
        });
        expect(result.status, result.stderr).toBe(2);
        expect(result.stdout).toContain(
          "instance create failed: instance 'model_0' on GPU 0: operon_cuda: cudaGetDeviceCount(&count) failed: cudaErrorInsufficientDriver",
        );
        expect(result.stdout).toMatch(
          /the NVIDIA driver supports CUDA 12\.0, older than the CUDA runtime this backend was built with \(1[3-9]\.\d\): update the driver/,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  } else {
    it("records why it was not built, since this machine has no nvcc", () => {
      expect(existsSync(CUDA_LIB)).toBe(false);
      expect(unavailableReason()).toMatch(/^no CUDA compiler: nvcc not found/);
    });
  }
});
