import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { SingleBar } from "cli-progress";
import { ApiSession } from "./api-session.js";
import { readSecretFile } from "./secret-file.js";

/**
 * `operon job run --operator X --dataset Y`: starts a batch job on a running
 * `operon serve` (through its control plane API, signed in as a user) and
 * follows it with a progress bar (rows, rows/s, time left, failed rows).
 * The dataset is a dataset's name, or a local CSV/JSONL/Parquet file, which
 * is uploaded as a new dataset first. Exits 0 when the job is done, 1 when
 * it failed or was cancelled, 2 on a bad request.
 */
interface JobView {
  id: string;
  state: string;
  error: string | null;
  totalRows: number | null;
  doneRows: number;
  failedRows: number;
  concurrency: number;
  rowsPerSec: number | null;
  secondsLeft: number | null;
}

type Mapping =
  | { input: string; kind: "tensor"; columns: string[] }
  | { input: string; kind: "text" | "image-path" | "image-bytes"; column: string };

export function parseMapping(value: string, previous: Mapping[] = []): Mapping[] {
  const match = /^([^=]+)=(?:(text|image-path|image-bytes):)?(.+)$/.exec(value);
  if (match === null)
    throw new InvalidArgumentError(
      "use INPUT=col1,col2 (numeric columns into a tensor) or INPUT=text:col / image-path:col / image-bytes:col",
    );
  const [, input = "", kind, columns = ""] = match;
  const entry: Mapping =
    kind === undefined
      ? { input, kind: "tensor", columns: columns.split(",").map((column) => column.trim()) }
      : { input, kind: kind as "text", column: columns };
  return [...previous, entry];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** A whole number of rows, at least 1; the server checks it against the target's max_batch_size. */
export function parseRowsPerRequest(value: string): number {
  const parsed = /^\s*[0-9]+\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError(`'${value}' is not a whole number of rows >= 1`);
  return parsed;
}

export function jobCommand(): Command {
  const job = new Command("job").description("Batch jobs over datasets (a running operon serve's control plane)");
  job.addCommand(
    new Command("run")
      .description("Run an operator or model over a dataset and follow it with a progress bar")
      .option("--operator <name>", "the operator to run")
      .option("--model <name>", "the model to run (instead of --operator)")
      .option("--model-version <n>", "the target's version (default: the served one)")
      .requiredOption("--dataset <name|file>", "a dataset's name, or a .csv/.jsonl/.parquet file to upload as one")
      .option("--query <sql>", "with a file: the dataset's SELECT over `source` (default SELECT * FROM source)")
      .option("--key <column>", "with a file: a key column copied to the results (repeatable)", collect)
      .option(
        "--map <input=columns>",
        "column mapping (repeatable): INPUT=c1,c2 numeric columns into a tensor; INPUT=text:col, image-path:col, image-bytes:col into BYTES. Default: suggested for a one-input target",
        parseMapping,
      )
      .option("--output <name>", "an output to keep (repeatable; default all)", collect)
      .option(
        "--rows-per-request <n>",
        "rows one request carries, 1 to the model's max_batch_size (default: the server's --batch-rows-per-request, else half the model's max_batch_size, at most 8; an operator takes 1)",
        parseRowsPerRequest,
      )
      .option("--api-url <url>", "the control plane API", process.env["OPERON_API_URL"] ?? "http://127.0.0.1:8003")
      .requiredOption("--email <email>", "your account")
      .option("--password-file <file>", "a file holding your password (else $OPERON_PASSWORD)")
      .option("--out <file>", "download the results (Parquet) here when the job is done")
      .option("--no-wait", "start the job, print its id and return")
      .action(async (flags: RunFlags) => {
        process.exitCode = await runJob(flags);
      }),
  );
  return job;
}

interface RunFlags {
  operator?: string;
  model?: string;
  modelVersion?: string;
  dataset: string;
  query?: string;
  key?: string[];
  map?: Mapping[];
  output?: string[];
  rowsPerRequest?: number;
  apiUrl: string;
  email: string;
  passwordFile?: string;
  out?: string;
  wait: boolean;
}

async function runJob(flags: RunFlags): Promise<number> {
  const fail = (message: string, code: number) => {
    process.stderr.write(`operon job run: ${message}\n`);
    return code;
  };
  if ((flags.operator === undefined) === (flags.model === undefined))
    return fail("give exactly one of --operator and --model", 2);
  const password =
    flags.passwordFile !== undefined
      ? readSecretFile(flags.passwordFile, "--password-file")
      : process.env["OPERON_PASSWORD"];
  if (password === undefined) return fail("give your password in $OPERON_PASSWORD or --password-file", 2);
  try {
    const session = await ApiSession.signIn(flags.apiUrl, flags.email, password);
    const datasetId = await datasetIdOf(session, flags);
    const created = await session.mutate<JobView>("jobs.create", {
      datasetId,
      target: {
        kind: flags.operator !== undefined ? "OPERATOR" : "MODEL",
        name: flags.operator ?? flags.model,
        ...(flags.modelVersion !== undefined ? { version: flags.modelVersion } : {}),
      },
      ...(flags.map !== undefined ? { mapping: flags.map } : {}),
      ...(flags.output !== undefined ? { outputs: flags.output } : {}),
      ...(flags.rowsPerRequest !== undefined ? { rowsPerRequest: flags.rowsPerRequest } : {}),
    });
    process.stderr.write(`job ${created.id} queued\n`);
    if (!flags.wait) {
      process.stdout.write(`${created.id}\n`);
      return 0;
    }
    const final = await follow(session, created.id);
    const summary = `job ${final.id} ${final.state.toLowerCase()}: ${final.doneRows - final.failedRows} of ${final.totalRows ?? "?"} rows with results, ${final.failedRows} failed`;
    if (final.state !== "DONE") return fail(`${summary}${final.error ? ` (${final.error})` : ""}`, 1);
    process.stdout.write(`${summary}\nresults: ${session.apiUrl}/api/jobs/${final.id}/result.parquet\n`);
    if (final.failedRows > 0) process.stdout.write("failed rows: in the console's Jobs page (retry them there)\n");
    if (flags.out !== undefined) {
      const response = await session.fetch(`/api/jobs/${final.id}/result.parquet`);
      if (!response.ok) return fail(`the results download answered ${response.status}: ${await response.text()}`, 1);
      writeFileSync(flags.out, Buffer.from(await response.arrayBuffer()));
      process.stdout.write(`wrote ${flags.out}\n`);
    }
    return 0;
  } catch (error) {
    return fail((error as Error).message, 2);
  }
}

/** A dataset's id by name, or a local file uploaded as a new dataset. */
async function datasetIdOf(session: ApiSession, flags: RunFlags): Promise<string> {
  if (existsSync(flags.dataset) && statSync(flags.dataset).isFile()) {
    const name = `${basename(flags.dataset, extname(flags.dataset)).replace(/[^A-Za-z0-9._-]/g, "_")}-${Date.now().toString(36)}`;
    const created = await session.mutate<{ id: string; preview: { rowCount: number } }>("datasets.create", {
      name,
      file: {
        kind: "upload",
        fileName: basename(flags.dataset),
        contentBase64: readFileSync(flags.dataset).toString("base64"),
      },
      ...(flags.query !== undefined ? { query: flags.query } : {}),
      ...(flags.key !== undefined ? { keyColumns: flags.key } : {}),
    });
    process.stderr.write(`uploaded ${flags.dataset} as dataset '${name}' (${created.preview.rowCount} rows)\n`);
    return created.id;
  }
  const datasets = await session.query<Array<{ id: string; name: string }>>("datasets.list");
  const found = datasets.find((dataset) => dataset.name === flags.dataset);
  if (found === undefined)
    throw new Error(
      `no dataset named '${flags.dataset}' (and no such file); yours: ${datasets.map((d) => d.name).join(", ") || "none"}`,
    );
  return found.id;
}

/** Polls the job until it ends, drawing the progress bar on stderr (a plain line a second when not a terminal). */
async function follow(session: ApiSession, id: string): Promise<JobView> {
  const bar = new SingleBar({
    format: "{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | {left} left | {failed} failed | {state}",
    barsize: 30,
    hideCursor: true,
    noTTYOutput: true,
    notTTYSchedule: 1000,
    stream: process.stderr,
  });
  let started = false;
  for (;;) {
    // Progress only: the cost (which reads every throughput sample of the job) is for the console.
    const job = await session.query<JobView>("jobs.get", { id, cost: false });
    const payload = {
      rate: job.rowsPerSec !== null ? job.rowsPerSec.toFixed(0) : "-",
      left: job.secondsLeft !== null ? `${Math.ceil(job.secondsLeft)} s` : "-",
      failed: job.failedRows,
      state: job.state.toLowerCase(),
    };
    if (!started && job.totalRows !== null) {
      bar.start(job.totalRows, job.doneRows, payload);
      started = true;
    } else if (started) bar.update(job.doneRows, payload);
    if (["DONE", "FAILED", "CANCELLED", "PAUSED"].includes(job.state)) {
      if (started) bar.stop();
      return job;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
