/**
 * How long a piece of work on the event loop held it, in ns: its wall time, but no more than the CPU time the
 * whole process used meanwhile. On a loaded host the OS preempts the gateway's thread in the middle of a run,
 * and the wall time then counts milliseconds in which other processes ran; the process's CPU time (every
 * thread of it) never counts those, and never reads less than this thread's own share. Node 20 has no
 * per-thread CPU clock; one getrusage call at each end costs under a microsecond.
 */
export function startLoopHoldClock(): () => number {
  const wallStart = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  return () => {
    const wallNs = Number(process.hrtime.bigint() - wallStart);
    const cpu = process.cpuUsage(cpuStart);
    return Math.min(wallNs, (cpu.user + cpu.system) * 1000);
  };
}
