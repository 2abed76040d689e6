// CPU time a process has used, from /proc: the figure machine noise moves least, so the benches judge the
// request path by it beside throughput and latency.
import { readFileSync } from "node:fs";

/** µs per clock tick of /proc's CPU fields (USER_HZ, 100 on Linux). */
const TICK_US = 1e6 / 100;

/** User + system CPU (µs) in a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line. */
export function cpuUsOfStatLine(stat) {
  // The command name (field 2) may hold spaces and parentheses: count fields from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** CPU time (user + system, µs) the process has used so far, all its threads. */
export function processCpuUs(pid) {
  return cpuUsOfStatLine(readFileSync(`/proc/${pid}/stat`, "utf8"));
}
