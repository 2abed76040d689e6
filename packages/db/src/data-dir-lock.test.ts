import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireDataDirLock, DataDirLockedError, LOCK_FILE } from "./data-dir-lock.js";
import { openDatabase } from "./database.js";

describe("embedded database lock", () => {
  it("lets one holder in at a time and frees the directory on release", () => {
    const dir = mkdtempSync(join(tmpdir(), "operon-lock-"));
    const lock = acquireDataDirLock(dir);
    expect(() => acquireDataDirLock(dir)).toThrow(DataDirLockedError);
    lock.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    acquireDataDirLock(dir).release();
  });

  it("refuses a directory another live process holds, naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "operon-lock-"));
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" });
    try {
      writeFileSync(join(dir, LOCK_FILE), String(other.pid));
      expect(() => acquireDataDirLock(dir)).toThrow(new RegExp(`in use by process ${other.pid}.*PostgreSQL`));
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("takes over a lock whose process is gone", async () => {
    const dir = mkdtempSync(join(tmpdir(), "operon-lock-"));
    const gone = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((resolve) => gone.once("exit", resolve));
    writeFileSync(join(dir, LOCK_FILE), String(gone.pid));
    acquireDataDirLock(dir).release();
  });

  it("keeps a second open of the same embedded database out until the first closes", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "operon-lock-db-")), "db");
    const first = await openDatabase({ url: `file:${dir}` });
    await expect(openDatabase({ url: `file:${dir}` })).rejects.toThrow(/is in use by process/);
    await first.close();
    const second = await openDatabase({ url: `file:${dir}` });
    await second.close();
  });
});
