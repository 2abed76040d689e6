import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";

/**
 * DuckDB, the embedded analytical engine datasets are queried with, opened
 * as a sandbox: it may read only the files named in `readPaths` and write
 * only under `writeDirs`, loads no extensions, and its configuration is
 * locked before any user SQL runs, so `SET enable_external_access = true`,
 * `ATTACH`, `read_text('/etc/passwd')` or `COPY … TO '/anywhere'` fail with
 * DuckDB's permission error. One sandbox per preview or per running job;
 * close() frees it.
 */
export interface DuckSandbox {
  connection: DuckDBConnection;
  close(): void;
}

export interface SandboxAccess {
  /** Files the SQL may read (absolute). */
  readPaths?: readonly string[];
  /** Folders the SQL may read and write (absolute, with a trailing slash added). */
  writeDirs?: readonly string[];
  /** DuckDB's threads (the control plane shares the host with the gateway). Default 2. */
  threads?: number;
}

export async function openSandbox(access: SandboxAccess): Promise<DuckSandbox> {
  const instance = await DuckDBInstance.create(":memory:", {
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    threads: String(access.threads ?? 2),
    memory_limit: "1GB",
  });
  const connection = await instance.connect();
  try {
    const paths = (access.readPaths ?? []).map(sqlString);
    const dirs = (access.writeDirs ?? []).map((dir) => sqlString(dir.endsWith("/") ? dir : `${dir}/`));
    if (paths.length > 0) await connection.run(`SET allowed_paths = [${paths.join(", ")}]`);
    if (dirs.length > 0) await connection.run(`SET allowed_directories = [${dirs.join(", ")}]`);
    await connection.run("SET enable_external_access = false");
    await connection.run("SET lock_configuration = true");
  } catch (error) {
    connection.closeSync();
    instance.closeSync();
    throw error;
  }
  return {
    connection,
    close: () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** A value as an SQL string literal. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** A name as an SQL identifier (a column named by a user, e.g. `"my col"`). */
export function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
