import type { WorkerRow } from "./workers-table";

/**
 * "14 instances: 5 in worker processes, 9 on gateway threads": what the page claims, counted (issue 27, item 7);
 * ", 1 on the gateway's event loop" only when a model runs inline.
 */
export function instanceCountLine(workers: readonly Pick<WorkerRow, "isolation">[]): string {
  const threads = workers.filter((worker) => worker.isolation === "thread").length;
  const inline = workers.filter((worker) => worker.isolation === "inline").length;
  const processes = workers.length - threads - inline;
  const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  const onLoop = inline > 0 ? `, ${inline} on the gateway's event loop` : "";
  return `${plural(workers.length, "instance", "instances")}: ${plural(processes, "in a worker process", "in worker processes")}, ${plural(threads, "on a gateway thread", "on gateway threads")}${onLoop}`;
}
