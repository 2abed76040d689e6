import { closeSync, openSync, readFileSync, readSync, writeSync } from "node:fs";

/**
 * Overwrites the values of the named variables in this process's original
 * environment block, the memory the kernel shows as /proc/<pid>/environ.
 * Deleting them from process.env (unsetenv) is not enough: that only drops
 * the pointer, the bytes stay where any process of the same account (or
 * root), a worker running user code among them, reads them. Linux only:
 * the block's bounds come from /proc/self/stat (env_start, env_end) and it
 * is written through /proc/self/mem. Returns the names it overwrote; throws
 * when the block cannot be read or written (the caller logs it).
 */
export function scrubEnvironmentBlock(names: readonly string[]): string[] {
  if (names.length === 0) return [];
  const stat = readFileSync("/proc/self/stat", "utf8");
  // Fields after "(comm)" start at field 3 (state); env_start and env_end are fields 50 and 51.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const start = Number(fields[47]);
  const end = Number(fields[48]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start || end - start > 16 * 1024 * 1024) {
    throw new Error(
      `cannot find the environment block in /proc/self/stat (env_start ${fields[47]}, env_end ${fields[48]})`,
    );
  }
  const fd = openSync("/proc/self/mem", "r+");
  try {
    const block = Buffer.alloc(end - start);
    readSync(fd, block, 0, block.length, start);
    const scrubbed: string[] = [];
    let entry = 0;
    while (entry < block.length) {
      let stop = block.indexOf(0, entry);
      if (stop === -1) stop = block.length;
      const eq = block.indexOf(0x3d, entry); // '='
      if (eq !== -1 && eq < stop) {
        const name = block.toString("latin1", entry, eq);
        if (names.includes(name) && stop > eq + 1) {
          writeSync(fd, Buffer.alloc(stop - eq - 1), 0, stop - eq - 1, start + eq + 1);
          scrubbed.push(name);
        }
      }
      entry = stop + 1;
    }
    return scrubbed;
  } finally {
    closeSync(fd);
  }
}
