/**
 * The environment a backend worker process starts with: an allow-list of
 * the parent's variables, never the parent's whole environment. A worker
 * runs user code (TypeScript models), so whatever it is handed, a model can
 * read: the server's own secrets (OPERON_ADMIN_PASSWORD, DATABASE_URL,
 * cloud credentials, tokens) must not reach it. A deny-list would miss the
 * next secret someone adds to the server's environment; the allow-list
 * passes only what a Node process and the backends need to run.
 *
 * NODE_OPTIONS and the other NODE_* variables are left out on purpose: they
 * can preload code (--require, --import) or open an inspector port.
 */

/** Variables passed through unchanged when the parent has them. */
export const WORKER_ENV_ALLOWED = [
  "PATH",
  "HOME",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TMPDIR",
  "TERM",
  "USER",
  "LOGNAME",
  "SHELL",
  // The GPUs the server was given: a worker's CUDA must number them as the gateway does (instance_group gpus and
  // TRITONBACKEND_ModelInstanceDeviceId are ordinals within this list), and in the same order.
  "CUDA_VISIBLE_DEVICES",
  "CUDA_DEVICE_ORDER",
] as const;

/** Variables passed through by prefix: locale settings, and Operon's own worker switches (below). */
const ALLOWED_PREFIXES = ["LC_"] as const;

/**
 * Operon's variables a worker reads (the native addon's kill switch and
 * override, hot-path tracing, the CUDA driver libtritonserver.so's device
 * pool and GPU-aware backends load instead of libcuda.so.1). Every other
 * OPERON_* variable stays with the server: the admin password among them.
 */
export const WORKER_ENV_OPERON_ALLOWED = [
  "OPERON_NATIVE",
  "OPERON_NATIVE_PATH",
  "OPERON_TRACE",
  "OPERON_CUDA_DRIVER_LIB",
] as const;

/** Who the worker runs as, when the server drops privileges for it (--worker-user). */
export interface WorkerIdentity {
  uid: number;
  gid: number;
  /** The account's name and home, which replace the server's USER/LOGNAME/HOME. */
  name: string;
  home: string;
}

/** The worker's environment built from the parent's (default process.env). */
export function workerEnvironment(
  parent: NodeJS.ProcessEnv = process.env,
  identity?: WorkerIdentity,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const allowed = new Set<string>([...WORKER_ENV_ALLOWED, ...WORKER_ENV_OPERON_ALLOWED]);
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    if (allowed.has(name) || ALLOWED_PREFIXES.some((prefix) => name.startsWith(prefix))) env[name] = value;
  }
  if (identity !== undefined) {
    env.HOME = identity.home;
    env.USER = identity.name;
    env.LOGNAME = identity.name;
  }
  return env;
}
