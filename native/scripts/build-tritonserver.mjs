// Builds Operon's libtritonserver.so, its backends and the C++ test host
// with the system C++ compiler (plain g++, no cmake: a bare machine with a
// compiler is enough). Run by @operon/native's `install` script (after the
// node-gyp addon build, since `node-gyp rebuild` empties build/) and by its
// `build` script; a target is compiled again only when one of its inputs
// (sources, headers, this script) is newer than the target, so
// `npm run build` is a no-op when nothing changed.
//
// Outputs, under native/build/tritonserver/:
//   lib/libtritonserver.so                      Triton's backend API + Operon's host API
//   backends/<name>/libtriton_<name>.so         each folder of native/backends/
//   bin/operon-backend-host                     the C++ test host (selftest, cuda-selftest, run)
//   test-fixtures/fake-cuda/libcuda.so.1        the fake CUDA driver of the C++ suite (device memory on the host)
//   backends/<name>/UNAVAILABLE                 a backend that was not built: one line, the reason
//                                               (a CUDA backend skipped without nvcc, or a compile error)
//   UNAVAILABLE                                 only when the build could not run or failed:
//                                               one line, the reason (read by the worker)
// It never fails an `npm install`: it prints one line and exits 0; the
// compiler's output of a failed build is kept in build/tritonserver/build.log.
//
// CXX picks the compiler (default g++). OPERON_NATIVE=0 skips the build.
// Backends with .cu sources (operon_cuda) need nvcc (NVCC, else nvcc on the
// PATH, else /usr/local/cuda/bin/nvcc): compiled for sm_90 (H200/H100) plus
// compute_90 PTX (CUDA_ARCHS="90 100" picks others), linked with the static
// CUDA runtime so only the driver (libcuda.so.1) is needed at run time.
// Without nvcc they are skipped with the reason; nothing else changes.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(root, "build", "tritonserver");
const marker = path.join(out, "UNAVAILABLE");
const logPath = path.join(out, "build.log");
const tag = "@operon/native:";
const cxx = process.env.CXX || "g++";

const common = [
  "-std=c++17",
  "-O2",
  "-Wall",
  "-Wextra",
  "-fPIC",
  "-fvisibility=hidden",
  "-I",
  path.join(root, "tritonserver", "include"),
];

function unavailable(reason) {
  mkdirSync(out, { recursive: true });
  writeFileSync(marker, `${reason}\n`);
  console.log(`${tag} native backends unavailable: ${reason}`);
  process.exit(0);
}

if (process.env.OPERON_NATIVE === "0") unavailable("OPERON_NATIVE=0 at install time, libtritonserver.so not built");
if (process.platform !== "linux") unavailable(`native backends are built on Linux only (this is ${process.platform})`);
const probe = spawnSync(cxx, ["--version"], { encoding: "utf8" });
if (probe.error || probe.status !== 0)
  unavailable(
    `no C++ compiler: '${cxx} --version' failed (${probe.error?.code ?? `exit ${probe.status}`}); install g++ and run npm install again`,
  );

const files = (dir, ext) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(ext))
        .map((f) => path.join(dir, f))
    : [];
const includeDir = path.join(root, "tritonserver", "include");
const headers = [
  ...files(path.join(includeDir, "operon"), ".h"),
  ...files(path.join(includeDir, "triton", "core"), ".h"),
  ...files(path.join(root, "tritonserver", "src"), ".h"),
  fileURLToPath(import.meta.url),
];
const lib = path.join(out, "lib", "libtritonserver.so");
const libDir = path.dirname(lib);

/** What to build: output, inputs (for the freshness check) and compiler arguments. */
const targets = [
  {
    name: "libtritonserver.so",
    output: lib,
    sources: files(path.join(root, "tritonserver", "src"), ".cc"),
    extra: [path.join(root, "tritonserver", "exports.map")],
    args: [
      "-shared",
      "-Wl,-soname,libtritonserver.so",
      "-Wl,--no-undefined",
      `-Wl,--version-script=${path.join(root, "tritonserver", "exports.map")}`,
    ],
    libs: ["-ldl", "-lpthread"],
  },
];
const nvcc = findNvcc();
// CUDA's root (the one with lib64/libcudart_static.a): CUDA_HOME, the folder above nvcc's real
// location (nvcc is often a symlink), or /usr/local/cuda (nvcc may be a wrapper script).
const cudaRoot =
  nvcc === undefined
    ? undefined
    : ([process.env.CUDA_HOME, path.resolve(path.dirname(realpathSync(nvcc)), ".."), "/usr/local/cuda"]
        .filter(Boolean)
        .find((dir) => existsSync(path.join(dir, "lib64", "libcudart_static.a"))) ?? "/usr/local/cuda");
const cudaArchs = (process.env.CUDA_ARCHS || "90").split(/[\s,]+/).filter(Boolean);
const skippedCuda = [];
const backendsDir = path.join(root, "backends");
for (const name of existsSync(backendsDir) ? readdirSync(backendsDir).sort() : []) {
  const dir = path.join(backendsDir, name);
  if (!statSync(dir).isDirectory()) continue;
  const cuSources = files(dir, ".cu");
  if (cuSources.length > 0) {
    const skipFile = path.join(out, "backends", name, "UNAVAILABLE");
    if (nvcc === undefined) {
      mkdirSync(path.dirname(skipFile), { recursive: true });
      writeFileSync(skipFile, "no CUDA compiler: nvcc not found (set NVCC or put CUDA's bin on the PATH)\n");
      skippedCuda.push(name);
      continue;
    }
    rmSync(skipFile, { force: true });
    targets.push({
      backend: true,
      cuda: true,
      name: `libtriton_${name}.so`,
      output: path.join(out, "backends", name, `libtriton_${name}.so`),
      sources: [...cuSources, ...files(dir, ".cc")],
      extra: [...files(dir, ".h"), lib],
      args: ["-shared", "-I", path.join(root, "tritonserver", "src"), "-Wl,-rpath,$ORIGIN/../../lib"],
      libs: [
        `-L${libDir}`,
        "-ltritonserver",
        `-L${path.join(cudaRoot, "lib64")}`,
        "-lcudart_static",
        "-lrt",
        "-ldl",
        "-lpthread",
      ],
    });
    continue;
  }
  targets.push({
    backend: true,
    name: `libtriton_${name}.so`,
    output: path.join(out, "backends", name, `libtriton_${name}.so`),
    sources: files(dir, ".cc"),
    extra: [...files(dir, ".h"), lib],
    // Backends see only Triton's headers and the private JSON helper; they
    // link against libtritonserver.so by name (NEEDED libtritonserver.so), as
    // Triton's do, and find it beside the host's copy when loaded.
    args: [
      "-shared",
      "-O3",
      "-ffp-contract=off",
      "-I",
      path.join(root, "tritonserver", "src"),
      "-Wl,-rpath,$ORIGIN/../../lib",
    ],
    // -ldl: a backend may load the CUDA driver at run time (cuda-driver.h, operon_gpu_identity).
    libs: [`-L${libDir}`, "-ltritonserver", "-lpthread", "-ldl"],
  });
}
// The fake CUDA driver (device memory on the host) the C++ suite points OPERON_CUDA_DRIVER_LIB at.
targets.push({
  name: "fake CUDA driver",
  output: path.join(out, "test-fixtures", "fake-cuda", "libcuda.so.1"),
  sources: [path.join(root, "test-fixtures", "fake-cuda-driver.cc")],
  extra: [],
  args: ["-shared"],
  libs: [],
});
// The test host also carries operon_cuda's CPU references and refusal hints (plain C++) for cuda-selftest.
const cudaDir = path.join(backendsDir, "operon_cuda");
targets.push({
  name: "operon-backend-host",
  output: path.join(out, "bin", "operon-backend-host"),
  sources: [
    ...files(path.join(root, "tritonserver", "test"), ".cc"),
    path.join(cudaDir, "cuda-reference.cc"),
    path.join(cudaDir, "cuda-refusal.cc"),
  ],
  extra: [
    ...files(path.join(root, "tritonserver", "test"), ".h"),
    path.join(cudaDir, "cuda-reference.h"),
    path.join(cudaDir, "cuda-refusal.h"),
    path.join(root, "src", "nvml-reader.h"),
    lib,
  ],
  // nvml-check uses the gateway addon's NVML reader (native/src/nvml-reader.h).
  args: ["-I", cudaDir, "-I", path.join(root, "src"), "-Wl,-rpath,$ORIGIN/../lib"],
  libs: [`-L${libDir}`, "-ltritonserver", "-lpthread", "-ldl"],
});

const mtime = (f) => (existsSync(f) ? statSync(f).mtimeMs : Number.POSITIVE_INFINITY);
const stale = (t) =>
  !existsSync(t.output) || [...t.sources, ...t.extra, ...headers].some((f) => mtime(f) > statSync(t.output).mtimeMs);

function findNvcc() {
  const candidates = [process.env.NVCC, "nvcc", "/usr/local/cuda/bin/nvcc"].filter(Boolean);
  for (const candidate of candidates) {
    const r = spawnSync(candidate, ["--version"], { encoding: "utf8" });
    if (!r.error && r.status === 0) {
      const found = spawnSync("sh", ["-c", `command -v "${candidate}"`], { encoding: "utf8" }).stdout.trim();
      return found || candidate;
    }
  }
  return undefined;
}

// nvcc arguments for one .cu source: sm_<arch> code for each arch, plus PTX of the newest for later GPUs.
function nvccArgs(t, src, obj) {
  const gencode = cudaArchs.flatMap((a) => ["-gencode", `arch=compute_${a},code=sm_${a}`]);
  const newest = cudaArchs[cudaArchs.length - 1];
  return [
    "-std=c++17",
    "-O3",
    "-fmad=false",
    "-Xcompiler",
    "-fPIC,-fvisibility=hidden,-Wall",
    "-I",
    includeDir,
    "-I",
    path.join(root, "tritonserver", "src"),
    ...gencode,
    "-gencode",
    `arch=compute_${newest},code=compute_${newest}`,
    "-c",
    src,
    "-o",
    obj,
  ];
}

function run(args, compiler = cxx) {
  return new Promise((resolve) => {
    const child = spawn(compiler, args, { stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (d) => (text += d));
    child.stderr.on("data", (d) => (text += d));
    child.on("error", (error) => resolve({ ok: false, text: `${text}${error.message}\n` }));
    child.on("close", (code) => resolve({ ok: code === 0, text }));
  });
}

// Targets in order (the library first: the others link against it); the
// library's translation units compile in parallel, one object per source.
let log = "";
let built = 0;
const brokenBackends = [];
for (const t of targets) {
  if (!stale(t)) continue;
  mkdirSync(path.dirname(t.output), { recursive: true });
  let inputs = t.sources;
  if (t.sources.length > 1) {
    const objDir = path.join(out, "obj", t.name);
    mkdirSync(objDir, { recursive: true });
    const jobs = Math.max(1, Math.min(os.availableParallelism?.() ?? 2, 4));
    const queue = t.sources.map((src) => ({ src, obj: path.join(objDir, `${path.basename(src)}.o`) }));
    inputs = queue.map((q) => q.obj);
    const todo = queue.filter(
      (q) => !existsSync(q.obj) || [q.src, ...headers, ...t.extra].some((f) => mtime(f) > statSync(q.obj).mtimeMs),
    );
    const workers = Array.from({ length: jobs }, async () => {
      for (let q = todo.shift(); q; q = todo.shift()) {
        const r = q.src.endsWith(".cu")
          ? await run(nvccArgs(t, q.src, q.obj), nvcc)
          : await run([
              ...common,
              ...(t.name === "operon-backend-host" ? ["-I", cudaDir, "-I", path.join(root, "src")] : []),
              "-c",
              q.src,
              "-o",
              q.obj,
            ]);
        log += r.text;
        if (!r.ok) throw new Error(`${path.relative(root, q.src)} did not compile`);
      }
    });
    try {
      await Promise.all(workers);
    } catch (error) {
      if (t.backend) {
        backendBroken(t, error.message, log);
        continue;
      }
      fail(t, error.message);
    }
  }
  const r = await run([...common, ...t.args, ...inputs, "-o", t.output, ...t.libs]);
  log += r.text;
  if (!r.ok && t.backend) {
    backendBroken(t, `${t.name} did not link`, r.text);
    continue;
  }
  if (!r.ok) fail(t, `${t.name} did not build`);
  if (t.backend) rmSync(path.join(path.dirname(t.output), "UNAVAILABLE"), { force: true });
  built += 1;
}

// One broken backend leaves the library and the other backends usable; its
// folder's UNAVAILABLE says why (the first compiler error; tritonserver-library.test.ts shows it).
function backendBroken(t, what, text) {
  rmSync(t.output, { force: true });
  brokenBackends.push(t.name);
  const first = text.split("\n").find((line) => /\berror\b/.test(line));
  writeFileSync(
    path.join(path.dirname(t.output), "UNAVAILABLE"),
    `${what}${first ? `: ${first.trim().slice(0, 200)}` : ""} (details: ${path.relative(root, logPath)})\n`,
  );
}

function fail(t, what) {
  rmSync(t.output, { force: true });
  mkdirSync(out, { recursive: true });
  writeFileSync(logPath, log);
  const first = log.split("\n").find((line) => /\berror\b/.test(line));
  unavailable(`${what}${first ? `: ${first.trim().slice(0, 200)}` : ""} (details: ${path.relative(root, logPath)})`);
}

rmSync(marker, { force: true });
if (skippedCuda.length > 0)
  console.log(
    `${tag} ${skippedCuda.join(", ")} skipped: no CUDA compiler (nvcc not found); the other native targets are usable`,
  );
if (brokenBackends.length > 0) {
  writeFileSync(logPath, log);
  console.log(
    `${tag} ${brokenBackends.join(", ")} did not build (details: ${path.relative(root, logPath)}); the other native targets are usable`,
  );
}
console.log(
  built === 0
    ? `${tag} libtritonserver.so and ${targets.length - 2} backend(s) up to date in build/tritonserver`
    : `${tag} built ${built} of ${targets.length} native target(s) in build/tritonserver (libtritonserver.so, ${targets.length - 2} backend(s), operon-backend-host)`,
);
