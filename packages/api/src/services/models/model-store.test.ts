import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelStore } from "./model-store.js";

describe("ModelStore", () => {
  let dir: string;
  let storeDir: string;
  let store: ModelStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-store-"));
    storeDir = join(dir, "store");
    store = await ModelStore.create(storeDir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function staged(content: string): string {
    const path = join(dir, `upload-${Math.random()}.part`);
    writeFileSync(path, content);
    return path;
  }

  /** Everything under the store, as "path: content" lines (folders end in "/"). */
  function snapshot(): string[] {
    const out: string[] = [];
    const walk = (path: string, prefix: string): void => {
      for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.isDirectory()) {
          out.push(`${prefix}${entry.name}/`);
          walk(join(path, entry.name), `${prefix}${entry.name}/`);
        } else out.push(`${prefix}${entry.name}: ${readFileSync(join(path, entry.name), "utf8")}`);
      }
    };
    walk(storeDir, "");
    return out;
  }

  it("adds a new model whole, and a version to an existing one; undo restores the store exactly", async () => {
    const first = staged("v1 bytes");
    await store.addVersion("m", 1, first, 'name: "m"\n');
    expect(existsSync(first)).toBe(false);
    expect(snapshot()).toEqual(["m/", "m/1/", "m/1/model.onnx: v1 bytes", 'm/config.pbtxt: name: "m"\n']);
    expect(await store.versionsOnDisk("m")).toEqual([1]);

    const before = snapshot();
    const second = await store.addVersion("m", 2, staged("v2 bytes"), 'name: "m"\nmax_batch_size: 2\n');
    expect(snapshot()).toContain("m/2/model.onnx: v2 bytes");
    expect(await store.readConfigText("m")).toBe('name: "m"\nmax_batch_size: 2\n');
    await second.undo();
    expect(snapshot()).toEqual(before);

    const fresh = await store.addVersion("n", 3, staged("n bytes"), "");
    await fresh.undo();
    expect(snapshot()).toEqual(before);
  });

  it("refuses to overwrite a version folder, leaving nothing behind", async () => {
    await store.addVersion("m", 1, staged("v1"), "a\n");
    const before = snapshot();
    await expect(store.addVersion("m", 1, staged("again"), "b\n")).rejects.toThrow(
      /already has a folder for version 1/,
    );
    expect(snapshot()).toEqual(before);
  });

  it("replaces a config atomically and restores it, or its absence", async () => {
    mkdirSync(join(storeDir, "bare"));
    const change = await store.replaceConfig("bare", "x: 1\n");
    expect(await store.readConfigText("bare")).toBe("x: 1\n");
    await change.undo();
    expect(await store.readConfigText("bare")).toBeUndefined();
    expect(readdirSync(storeDir)).toEqual(["bare"]);
  });

  it("removes a model by moving it aside; undo puts it back, commit deletes it", async () => {
    await store.addVersion("m", 1, staged("v1"), "a\n");
    const before = snapshot();
    const removal = await store.removeModel("m");
    expect(await store.hasModel("m")).toBe(false);
    await removal.undo();
    expect(snapshot()).toEqual(before);
    await (await store.removeModel("m")).commit();
    expect(readdirSync(storeDir)).toEqual([]);
    await (await store.removeModel("never")).commit();
  });

  it("clears hidden leftovers of a crash when it starts, and nothing else", async () => {
    mkdirSync(join(storeDir, ".staging-x", "1"), { recursive: true });
    mkdirSync(join(storeDir, ".trash-y"));
    mkdirSync(join(storeDir, "kept"));
    await ModelStore.create(storeDir);
    expect(readdirSync(storeDir)).toEqual(["kept"]);
  });
});
