/**
 * A job's figures cached per state of the job: a query's options whose key
 * also holds the state the job list shows (RUNNING, DONE, …).
 *
 * Why: a job that ends, pauses or resumes must be read again at once, and
 * what was read before must not stand for it meanwhile. The job's samples of
 * its last seconds are written before it is marked done
 * (job-execution.ts), so an answer read after the change has them; one read
 * while it ran may have none (a job that ends within one sample period has
 * no sample before its end). Remounting the component on a state change did
 * not do it: the console's queries stay fresh for 5 s (providers.tsx), so
 * the remounted chart kept the running job's answer until the next 2 s
 * refresh, and the job-throughput-and-cost browser spec read a finished
 * job's rows/s as 0. A key per state has no answer in the cache until it is
 * read (the page shows "Loading…" meanwhile, not stale figures), and an
 * entry is dropped once the job leaves its state (gcTime 0), so a job that
 * resumes is not shown its figures from before the pause either.
 */
export function perJobState<Options extends { queryKey: readonly unknown[] }>(
  options: Options,
  state: string,
): Options & { gcTime: number } {
  // tRPC's key is [path, { input, type }] and it reads the call from it: a third entry would make it read the key
  // as [prefix, path, args]. The state goes beside the input, which tRPC sends alone.
  const [path, args, ...rest] = options.queryKey;
  if (rest.length > 0 || typeof args !== "object" || args === null)
    throw new Error("perJobState takes a tRPC query's options: a key of [path, { input, type }]");
  const queryKey = [path, { ...args, jobState: state }] as unknown as Options["queryKey"];
  return { ...options, queryKey, gcTime: 0 };
}
