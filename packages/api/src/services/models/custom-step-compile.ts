import { createRequire } from "node:module";
import { dirname } from "node:path";
import { TYPESCRIPT_MODEL_API_DECLARATIONS } from "@operon/backend-api/typescript-model-api-declarations";
import ts from "typescript";
import { type DeclaredStepSignature, readDeclaredSignature } from "./custom-step-signature.js";
import type { CompileProblem } from "./custom-step-problem.js";

export { type CompileProblem, formatProblem } from "./custom-step-problem.js";

/**
 * Type-checks an uploaded custom step before anything is stored: its
 * model.ts, in memory under a virtual folder, compiled as a strict program
 * against Node's types and the model API
 * (`@operon/backend-api/typescript-model-api`, the worker's declarations).
 * Nothing is emitted and nothing runs. Each problem is `file:line:col
 * message` with the uploaded file's path, so the console can point at it.
 *
 * The check is the author's help, not the sandbox: what the code may do at
 * run time is decided by the worker's sandbox, whatever types it declares.
 */

/** Where the uploaded files live for the compiler (never on disk). */
const ROOT = "/custom-step/";
const MODEL_API = "@operon/backend-api/typescript-model-api";

const compilerOptions = (): ts.CompilerOptions => ({
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ["lib.es2023.d.ts"],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  esModuleInterop: true,
  allowImportingTsExtensions: true,
  types: ["node"],
  typeRoots: [nodeTypeRoot()],
  paths: { [MODEL_API]: [TYPESCRIPT_MODEL_API_DECLARATIONS] },
});

/** The node_modules/@types folder holding @types/node (a dev dependency: an installation without it cannot check). */
function nodeTypeRoot(): string {
  try {
    return dirname(dirname(createRequire(import.meta.url).resolve("@types/node/package.json")));
  } catch (error) {
    throw new Error(`custom steps cannot be type-checked: @types/node is not installed beside the API`, {
      cause: error,
    });
  }
}

/**
 * Problems of the uploaded files (path -> text); empty when `entry` and what
 * it imports compile. Synchronous, and seconds on a busy host (TypeScript
 * reads Node's declarations each time): the control plane runs it in a worker
 * thread (custom-step-checker.ts), never on its event loop.
 */
export function compileCustomStep(files: ReadonlyMap<string, string>, entry = "model.ts"): CompileProblem[] {
  return inspectCustomStep(files, entry).problems;
}

/**
 * compileCustomStep, and what the entry declares about its tensors
 * (custom-step-signature.ts): its compile problems and the declaration's
 * own, and the declared signature when there is one and it counts.
 */
export function inspectCustomStep(
  files: ReadonlyMap<string, string>,
  entry = "model.ts",
): { problems: CompileProblem[]; signature: DeclaredStepSignature | null } {
  const OPTIONS = compilerOptions();
  const virtual = new Map([...files].map(([path, text]) => [ROOT + path, text]));
  const host = ts.createCompilerHost(OPTIONS, true);
  const readReal = host.readFile.bind(host);
  const existsReal = host.fileExists.bind(host);
  const sourceReal = host.getSourceFile.bind(host);
  host.fileExists = (name) => virtual.has(name) || (!name.startsWith(ROOT) && existsReal(name));
  host.readFile = (name) => virtual.get(name) ?? (name.startsWith(ROOT) ? undefined : readReal(name));
  host.getSourceFile = (name, language, onError) => {
    const text = virtual.get(name);
    if (text !== undefined) return ts.createSourceFile(name, text, language, true);
    return name.startsWith(ROOT) ? undefined : sourceReal(name, language, onError);
  };
  const directoryReal = host.directoryExists?.bind(host);
  host.directoryExists = (name) => (name.startsWith(ROOT.slice(0, -1)) ? true : (directoryReal?.(name) ?? true));
  host.realpath = (name) => name;
  host.getCurrentDirectory = () => ROOT;
  host.writeFile = () => undefined;
  const program = ts.createProgram({ rootNames: [ROOT + entry], options: OPTIONS, host });
  const problems = ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error)
    .map((diagnostic) => problemOf(diagnostic));
  const source = program.getSourceFile(ROOT + entry);
  if (source === undefined) return { problems, signature: null };
  const declared = readDeclaredSignature(source, entry);
  return { problems: [...problems, ...declared.problems], signature: declared.signature };
}

function problemOf(diagnostic: ts.Diagnostic): CompileProblem {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
  const file = diagnostic.file;
  if (file === undefined || diagnostic.start === undefined) return { file: "", line: 0, column: 0, message };
  const { line, character } = file.getLineAndCharacterOfPosition(diagnostic.start);
  const name = file.fileName.startsWith(ROOT) ? file.fileName.slice(ROOT.length) : file.fileName;
  return { file: name, line: line + 1, column: character + 1, message };
}
