import { mkdir, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Dataset, DatasetFormat, DatasetSource, PrismaClient } from "@operon/db";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import { requireOwnerOrAdmin, type Changer } from "../ownership/ownership.js";
import { formatOfFile, resolveServerPath } from "./dataset-files.js";
import { connectionUrl, parseTableName, tablePath, withConnection } from "./postgres-table.js";
import { DEFAULT_QUERY, previewQuery, type DatasetColumn, type DatasetPreview } from "./dataset-query.js";

/**
 * Datasets: a query over one file (uploaded, on an allowed server path, or a
 * job's results) or over a folder of images on an allowed server path. Creating one runs its query once (the preview), so a bad
 * query or an unreadable file is refused with DuckDB's reason before anything
 * is stored. Engineers see and change their own datasets, admins all.
 */
export interface DatasetSummary {
  id: string;
  name: string;
  source: DatasetSource;
  format: string;
  /** The file's name (uploads, results) or the server path (admins' server paths). */
  file: string;
  query: string;
  keyColumns: string[];
  ownerId: string | null;
  createdAt: Date;
}

export interface BatchStorageOptions {
  /** The control plane's batch folder: uploaded dataset files, job snapshots and results. */
  dir: string;
  /** Folders server-path datasets may read (--batch-data-root); empty = none. */
  serverPathRoots: string[];
  /** PostgreSQL databases table datasets may read, by name (--batch-postgres NAME=URL); absent = none. */
  postgresConnections?: Readonly<Record<string, string>>;
}

/** The largest uploaded dataset file (it travels base64 in one API request of at most 8 MiB). */
export const MAX_DATASET_UPLOAD_BYTES = 5 * 1024 * 1024;

export type DatasetFileInput =
  | { kind: "upload"; fileName: string; contentBase64: string }
  | { kind: "serverPath"; path: string }
  | { kind: "postgres"; connection: string; table: string };

export interface CreateDatasetInput {
  name: string;
  file: DatasetFileInput;
  query?: string | undefined;
  keyColumns?: string[] | undefined;
}

export class Datasets {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly storage: BatchStorageOptions,
  ) {}

  async create(
    actor: Actor,
    who: Changer,
    input: CreateDatasetInput,
  ): Promise<DatasetSummary & { preview: DatasetPreview }> {
    const query = input.query?.trim() || DEFAULT_QUERY;
    if ((await this.prisma.dataset.findUnique({ where: { name: input.name }, select: { id: true } })) !== null)
      throw new AppError("CONFLICT", `a dataset named '${input.name}' exists already`, {
        fieldErrors: [{ path: "name", message: "taken" }],
      });
    const id = crypto.randomUUID();
    let path: string;
    let source: DatasetSource;
    let folder: string | undefined;
    let format: DatasetFormat;
    if (input.file.kind === "postgres") {
      if (who.role !== "ADMIN")
        throw new AppError(
          "FORBIDDEN",
          "only admins may make a dataset of a PostgreSQL table; export it to a file instead",
        );
      connectionUrl(this.connections(), input.file.connection);
      path = tablePath({ connection: input.file.connection, ...parseTableName(input.file.table) });
      source = "POSTGRES";
      format = "POSTGRES_TABLE";
    } else if (input.file.kind === "serverPath") {
      if (who.role !== "ADMIN")
        throw new AppError(
          "FORBIDDEN",
          "only admins may make a dataset of a file on the server; upload the file instead",
        );
      const resolved = await resolveServerPath(input.file.path, this.storage.serverPathRoots, "file.path");
      path = resolved.real;
      source = "SERVER_PATH";
      // A folder: its images, one row each (image-folder.ts).
      format = resolved.folder ? "IMAGE_FOLDER" : formatOfFile(path, "file.path");
    } else {
      const bytes = decodeUpload(input.file.contentBase64);
      // The stored name is the upload's base name only: never a path the client chose.
      const fileName = basename(input.file.fileName).replace(/[^A-Za-z0-9._-]/g, "_") || "data";
      formatOfFile(fileName, "file.fileName");
      folder = join(this.storage.dir, "datasets", id);
      await mkdir(folder, { recursive: true });
      path = join(folder, fileName);
      await writeFile(path, bytes);
      source = "UPLOAD";
      format = formatOfFile(fileName, "file.fileName");
    }
    try {
      const preview = await previewQuery(withConnection({ format, path }, this.connections()), query);
      checkKeyColumns(input.keyColumns ?? [], preview.columns);
      const row = await this.prisma.$transaction(async (tx) => {
        const created = await tx.dataset.create({
          data: {
            id,
            name: input.name,
            ownerId: who.id,
            source,
            format,
            path,
            query,
            keyColumns: input.keyColumns ?? [],
          },
        });
        await recordAudit(tx, actor, {
          action: "dataset.create",
          targetType: "Dataset",
          targetId: id,
          after: { name: created.name, source, format, query },
        });
        return created;
      });
      return { ...summarize(row, who), preview };
    } catch (error) {
      if (folder !== undefined) await rm(folder, { recursive: true, force: true });
      throw error;
    }
  }

  /** A job's results as a dataset (the job's owner owns it). */
  async registerResult(
    actor: Actor,
    input: { name: string; path: string; ownerId: string | null; keyColumns: string[] },
  ): Promise<Dataset> {
    if ((await this.prisma.dataset.findUnique({ where: { name: input.name }, select: { id: true } })) !== null)
      throw new AppError("CONFLICT", `a dataset named '${input.name}' exists already`, {
        fieldErrors: [{ path: "name", message: "taken" }],
      });
    return this.prisma.$transaction(async (tx) => {
      const created = await tx.dataset.create({
        data: {
          name: input.name,
          ownerId: input.ownerId,
          source: "JOB_RESULT",
          format: "PARQUET",
          path: input.path,
          query: DEFAULT_QUERY,
          keyColumns: input.keyColumns,
        },
      });
      await recordAudit(tx, actor, {
        action: "dataset.create",
        targetType: "Dataset",
        targetId: created.id,
        after: { name: created.name, source: "JOB_RESULT" },
      });
      return created;
    });
  }

  async list(who: Changer): Promise<DatasetSummary[]> {
    const rows = await this.prisma.dataset.findMany({
      where: who.role === "ADMIN" ? {} : { ownerId: who.id },
      orderBy: { createdAt: "desc" },
    });
    return rows.map((row) => summarize(row, who));
  }

  /** The dataset if `who` may see it (its owner or an admin); NOT_FOUND otherwise, so names of others' datasets do not leak. */
  async get(who: Changer, id: string): Promise<Dataset> {
    const row = await this.prisma.dataset.findUnique({ where: { id } });
    if (row === null || (who.role !== "ADMIN" && row.ownerId !== who.id)) throw notFound(`dataset ${id}`);
    return row;
  }

  async preview(who: Changer, id: string, limit?: number): Promise<DatasetSummary & { preview: DatasetPreview }> {
    const row = await this.get(who, id);
    return {
      ...summarize(row, who),
      preview: await previewQuery(withConnection(row, this.connections()), row.query, limit),
    };
  }

  /**
   * What an admin may name in a server-side dataset (the console's dataset form): the --batch-postgres
   * connections by name only (their URLs hold hosts, users and perhaps passwords: they never leave the
   * server) and the folders --batch-data-root allows. Admins only (FORBIDDEN otherwise), as the datasets
   * that name them are.
   */
  serverSources(who: Changer): { postgresConnections: string[]; dataRoots: string[] } {
    if (who.role !== "ADMIN")
      throw new AppError("FORBIDDEN", "only admins may make datasets of the server's folders or tables");
    return {
      postgresConnections: Object.keys(this.connections()).sort(),
      dataRoots: [...this.storage.serverPathRoots],
    };
  }

  private connections(): Readonly<Record<string, string>> {
    return this.storage.postgresConnections ?? {};
  }

  async remove(actor: Actor, who: Changer, id: string): Promise<void> {
    const row = await this.get(who, id);
    await requireOwnerOrAdmin(this.prisma, who, "dataset", `'${row.name}'`, row.ownerId);
    const jobs = await this.prisma.batchJob.count({ where: { datasetId: id } });
    if (jobs > 0) throw new AppError("CONFLICT", `dataset '${row.name}' has ${jobs} job(s); delete them first`);
    await this.prisma.$transaction(async (tx) => {
      await tx.dataset.delete({ where: { id } });
      await recordAudit(tx, actor, { action: "dataset.delete", targetType: "Dataset", targetId: id, before: row });
    });
    if (row.source === "UPLOAD") await rm(join(this.storage.dir, "datasets", id), { recursive: true, force: true });
  }
}

function decodeUpload(contentBase64: string): Buffer {
  const refuse = (message: string) =>
    new AppError("VALIDATION_FAILED", message, { fieldErrors: [{ path: "file.contentBase64", message }] });
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(contentBase64) || contentBase64.length % 4 !== 0)
    throw refuse("the file must be base64 (standard alphabet, with padding)");
  // Checked on the length before decoding: a hostile request is refused without allocating it.
  if ((contentBase64.length / 4) * 3 > MAX_DATASET_UPLOAD_BYTES + 2)
    throw refuse(
      `the file is over ${MAX_DATASET_UPLOAD_BYTES / 1024 / 1024} MiB; put larger files under --batch-data-root`,
    );
  const bytes = Buffer.from(contentBase64, "base64");
  if (bytes.length === 0) throw refuse("the file is empty");
  return bytes;
}

function checkKeyColumns(keys: readonly string[], columns: readonly DatasetColumn[]): void {
  for (const [index, key] of keys.entries()) {
    if (!columns.some((column) => column.name === key))
      throw new AppError(
        "VALIDATION_FAILED",
        `key column '${key}' is not a column of the query (${columns.map((column) => column.name).join(", ")})`,
        { fieldErrors: [{ path: `keyColumns.${index}`, message: "no such column" }] },
      );
  }
}

function summarize(row: Dataset, who: Changer): DatasetSummary {
  return {
    id: row.id,
    name: row.name,
    source: row.source,
    format: row.format,
    // Only admins see server paths; others see the file's name. A table is `<connection>:<schema>.<table>`.
    file:
      (row.source === "SERVER_PATH" && who.role === "ADMIN") || row.source === "POSTGRES"
        ? row.path
        : basename(row.path),
    query: row.query,
    keyColumns: row.keyColumns,
    ownerId: row.ownerId,
    createdAt: row.createdAt,
  };
}
