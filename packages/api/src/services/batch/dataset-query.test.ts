import { mkdtempSync, writeFileSync, existsSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { previewQuery } from "./dataset-query.js";
import { resolveServerPath } from "./dataset-files.js";

const dir = mkdtempSync(join(tmpdir(), "operon-dataset-"));
const file = join(dir, "data.csv");
writeFileSync(file, "id,x\n1,0.5\n2,1.5\n3,2.5\n");
writeFileSync(join(dir, "secret.txt"), "do not read\n");
const source = { format: "CSV" as const, path: file };

describe("dataset queries (DuckDB in a sandbox)", () => {
  it("previews the query's columns, first rows and row count", async () => {
    const preview = await previewQuery(source, "SELECT id, x * 2 AS y FROM source WHERE x > 1 -- a comment", 1);
    expect(preview).toEqual({
      columns: [
        { name: "id", type: "BIGINT" },
        { name: "y", type: "DOUBLE" },
      ],
      rows: [{ id: "2", y: 3 }],
      rowCount: 2,
    });
  });

  it("reads no other file, writes nothing, changes no setting", async () => {
    const refused = [
      `SELECT * FROM read_csv('${join(dir, "secret.txt")}')`,
      "SELECT * FROM read_text('/etc/passwd')",
      `COPY (SELECT 1) TO '${join(dir, "out.csv")}'`,
      "SET enable_external_access = true",
      `ATTACH '${join(dir, "x.duckdb")}'`,
      "INSTALL httpfs",
      "SELECT 1; SELECT 2",
    ];
    for (const query of refused) await expect(previewQuery(source, query), query).rejects.toThrow();
    expect(existsSync(join(dir, "out.csv"))).toBe(false);
    expect(existsSync(join(dir, "x.duckdb"))).toBe(false);
  });

  it("names a syntax error and a missing column", async () => {
    await expect(previewQuery(source, "SELEC 1")).rejects.toThrow(
      /not valid SQL: Parser Error: syntax error at or near "SELEC"/,
    );
    await expect(previewQuery(source, "SELECT nope FROM source")).rejects.toThrow(/cannot run: .*nope/);
  });

  it("refuses server paths outside the roots, symbolic links included", async () => {
    await expect(resolveServerPath(file, [dir])).resolves.toEqual({ real: file, folder: false });
    await expect(resolveServerPath("/etc/passwd", [dir])).rejects.toThrow(/outside the folders/);
    await expect(resolveServerPath(join(dir, "..", "elsewhere.csv"), [dir])).rejects.toThrow(/does not exist/);
    await expect(resolveServerPath("relative.csv", [dir])).rejects.toThrow(/must be absolute/);
    const link = join(dir, "passwd-link.csv");
    symlinkSync("/etc/passwd", link);
    await expect(resolveServerPath(link, [dir])).rejects.toThrow(/outside the folders/);
    // A folder is a folder of images (image-folder.ts).
    await expect(resolveServerPath(dir, [dir])).resolves.toEqual({ real: dir, folder: true });
  });
});
