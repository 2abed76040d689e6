import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { previewQuery } from "./dataset-query.js";
import { listImageFolder } from "./image-folder.js";

const outside = realpathSync(mkdtempSync(join(tmpdir(), "operon-outside-")));
writeFileSync(join(outside, "secret.png"), "not yours");
const dir = realpathSync(mkdtempSync(join(tmpdir(), "operon-images-")));
writeFileSync(join(dir, "b.png"), Buffer.alloc(7));
writeFileSync(join(dir, "a.PNG"), Buffer.alloc(3));
writeFileSync(join(dir, "notes.txt"), "not an image");
mkdirSync(join(dir, "sub", "deeper"), { recursive: true });
writeFileSync(join(dir, "sub", "deeper", "c.jpg"), Buffer.alloc(5));
// Links are never followed, to a file or to a folder.
symlinkSync(join(outside, "secret.png"), join(dir, "link.png"));
symlinkSync(outside, join(dir, "linked-folder"));

const LIMITS = { maxImages: 100, maxEntries: 100, maxDepth: 16 };

describe("image folders as datasets", () => {
  it("lists the image files, in path order, with their sizes, and follows no link", async () => {
    expect(await listImageFolder(dir, LIMITS)).toEqual([
      { path: "a.PNG", sizeBytes: 3 },
      { path: "b.png", sizeBytes: 7 },
      { path: "sub/deeper/c.jpg", sizeBytes: 5 },
    ]);
  });

  it("refuses, never cuts short, a folder past its limits", async () => {
    await expect(listImageFolder(dir, { ...LIMITS, maxImages: 2 })).rejects.toThrow(/more than 2 images/);
    await expect(listImageFolder(dir, { ...LIMITS, maxEntries: 4 })).rejects.toThrow(/more than 4 entries/);
    await expect(listImageFolder(dir, { ...LIMITS, maxDepth: 1 })).rejects.toThrow(
      /deeper than 1 levels \(at 'sub\/deeper'\)/,
    );
    await expect(listImageFolder(join(dir, "missing"), LIMITS)).rejects.toThrow(/cannot be read/);
  });

  it("is the view `source` of a dataset query: path and size_bytes, and SQL reads no file", async () => {
    const source = { format: "IMAGE_FOLDER" as const, path: dir };
    const preview = await previewQuery(source, "SELECT path, size_bytes FROM source WHERE size_bytes > 4");
    expect(preview.columns).toEqual([
      { name: "path", type: "VARCHAR" },
      { name: "size_bytes", type: "BIGINT" },
    ]);
    expect(preview.rows).toEqual([
      { path: "b.png", size_bytes: "7" },
      { path: "sub/deeper/c.jpg", size_bytes: "5" },
    ]);
    await expect(previewQuery(source, `SELECT * FROM read_blob('${join(dir, "b.png")}')`)).rejects.toThrow();
  });
});
