import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createRequire, isBuiltin } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type * as TypeScript from "typescript";
import { OperonError } from "@operon/protocol/errors";
import { assertModelBackendApi, type BackendApiVersion } from "@operon/backend-api/backend-api-version";

/**
 * Imports a TypeScript-backend model file: model.js / model.mjs as they
 * are, model.ts (or .mts) transpiled first with the `typescript` package's
 * transpileModule (one file, no type check: types are the author's editor's
 * business) into a temporary model.mjs under os.tmpdir(), which is deleted
 * once imported. The model's folder may be read-only, so nothing is written
 * beside it.
 *
 * So that the transpiled file behaves as if it sat in the model's folder,
 * its import specifiers are rewritten to absolute file URLs: relative ones
 * against that folder (they must name .js/.mjs files: only the entry is
 * transpiled), bare package names as Node resolves them from there; and
 * import.meta.url / .filename / .dirname name model.ts itself (models find
 * their weights that way). Its inline source map points at the .ts file and
 * source maps are enabled in this process, so stack traces name model.ts
 * lines.
 *
 * Every failure is INVALID_ARG naming the file, with `file:line:column`
 * where one is known: TypeScript's syntax errors, a JS syntax error (Node
 * does not say where; the TypeScript parser finds it, parsing the file
 * only after a failed import), or the first stack frame in the file for an
 * exception thrown while the module ran.
 *
 * Each load imports a fresh module instance (the URL carries the file's
 * mtime), so a changed model.js is seen on reload.
 *
 * The module may declare the backend API version it was written for
 * (`operonBackendApi = { major, minor }`, exported or a static property of
 * the exported class); one the server cannot serve fails the load with
 * INVALID_ARG naming both versions. Without a declaration the model is
 * taken as written for the server's version. `serverApi` is for tests.
 */
export async function importModelModule(
  modelPath: string,
  serverApi?: BackendApiVersion,
): Promise<Record<string, unknown>> {
  const module = await importModule(modelPath);
  assertModelBackendApi(declaredBackendApi(module), `model file '${modelPath}'`, serverApi);
  return module;
}

/** The module's `operonBackendApi` export, else that static property of its default export or `Model`. */
function declaredBackendApi(module: Record<string, unknown>): unknown {
  if (module["operonBackendApi"] !== undefined) return module["operonBackendApi"];
  const exported = module["default"] ?? module["Model"];
  return typeof exported === "function" || (typeof exported === "object" && exported !== null)
    ? (exported as { operonBackendApi?: unknown }).operonBackendApi
    : undefined;
}

async function importModule(modelPath: string): Promise<Record<string, unknown>> {
  let mtimeMs: number;
  try {
    const info = await stat(modelPath);
    if (!info.isFile()) throw new Error("not a file");
    mtimeMs = info.mtimeMs;
  } catch (error) {
    throw new OperonError(
      "INVALID_ARG",
      `model file '${modelPath}' not found or not readable: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const extension = path.extname(modelPath);
  if (extension === ".ts" || extension === ".mts") return importTranspiled(modelPath);
  if (extension !== ".js" && extension !== ".mjs" && extension !== ".cjs") {
    throw new OperonError(
      "INVALID_ARG",
      `model file '${modelPath}': the typescript backend loads .ts, .mts, .js, .mjs or .cjs files`,
    );
  }
  const url = `${pathToFileURL(modelPath).href}?mtime=${Math.trunc(mtimeMs)}`;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw await loadError(modelPath, [modelPath], error);
  }
}

/** False under Node's permission model without write access to `dir` (a sandboxed worker). */
function mayWrite(dir: string): boolean {
  const permission = (process as { permission?: { has(scope: string, reference?: string): boolean } }).permission;
  return permission === undefined || permission.has("fs.write", dir);
}

let typescript: typeof TypeScript | undefined;

/** The compiler is large (about 9 MB of JS): loaded only for a .ts model or to locate a syntax error. */
async function loadTypeScript(): Promise<typeof TypeScript> {
  typescript ??= ((await import("typescript")) as unknown as { default: typeof TypeScript }).default;
  return typescript;
}

async function importTranspiled(modelPath: string): Promise<Record<string, unknown>> {
  const ts = await loadTypeScript();
  const source = await readFile(modelPath, "utf8");
  const require = createRequire(modelPath);
  const output = ts.transpileModule(source, {
    fileName: modelPath,
    reportDiagnostics: true,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      sourceMap: true,
      esModuleInterop: true,
      verbatimModuleSyntax: false,
    },
    transformers: { after: [relocate(ts, modelPath, (specifier) => resolveSpecifier(specifier, modelPath, require))] },
  });
  const errors = (output.diagnostics ?? []).filter((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const listed = errors.slice(0, 5).map((diagnostic) => describeDiagnostic(ts, diagnostic, modelPath));
    const more = errors.length > 5 ? ` (and ${errors.length - 5} more)` : "";
    throw new OperonError("INVALID_ARG", `model file '${modelPath}' does not compile: ${listed.join("; ")}${more}`);
  }
  const code = output.outputText.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  const map = JSON.parse(output.sourceMapText ?? "{}") as { sources?: string[]; sourceRoot?: string };
  map.sources = [pathToFileURL(modelPath).href];
  delete map.sourceRoot;
  const inlineMap = `//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString("base64")}\n`;

  process.setSourceMapsEnabled(true);
  // A sandboxed worker may write nowhere: the module is imported from a data: URL (its imports are absolute already).
  if (!mayWrite(os.tmpdir())) {
    const url = `data:text/javascript;base64,${Buffer.from(code + inlineMap).toString("base64")}`;
    try {
      return (await import(url)) as Record<string, unknown>;
    } catch (error) {
      throw await loadError(modelPath, [modelPath], error);
    }
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "operon-ts-model-"));
  const target = path.join(dir, "model.mjs");
  try {
    await writeFile(target, code + inlineMap);
    try {
      return (await import(pathToFileURL(target).href)) as Record<string, unknown>;
    } catch (error) {
      throw await loadError(modelPath, [modelPath, target], error);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Makes the transpiled module behave as if it sat at modelPath: rewrites
 * the module specifiers of static imports/exports and import("...") calls,
 * and replaces import.meta.url / filename / dirname with modelPath's.
 */
function relocate(
  ts: typeof TypeScript,
  modelPath: string,
  rewrite: (specifier: string) => string,
): TypeScript.TransformerFactory<TypeScript.SourceFile> {
  const meta: Record<string, string> = {
    url: pathToFileURL(modelPath).href,
    filename: modelPath,
    dirname: path.dirname(modelPath),
  };
  return (context) => (sourceFile) => {
    const { factory } = context;
    const literal = (node: TypeScript.Expression): TypeScript.StringLiteral | undefined => {
      if (!ts.isStringLiteral(node)) return undefined;
      const rewritten = rewrite(node.text);
      return rewritten === node.text ? undefined : factory.createStringLiteral(rewritten);
    };
    const visit = (node: TypeScript.Node): TypeScript.Node => {
      if (ts.isImportDeclaration(node)) {
        const specifier = literal(node.moduleSpecifier);
        if (specifier !== undefined)
          return factory.updateImportDeclaration(node, node.modifiers, node.importClause, specifier, node.attributes);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
        const specifier = literal(node.moduleSpecifier);
        if (specifier !== undefined) {
          return factory.updateExportDeclaration(
            node,
            node.modifiers,
            node.isTypeOnly,
            node.exportClause,
            specifier,
            node.attributes,
          );
        }
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] !== undefined
      ) {
        const specifier = literal(node.arguments[0]);
        if (specifier !== undefined)
          return factory.updateCallExpression(node, node.expression, node.typeArguments, [
            specifier,
            ...node.arguments.slice(1),
          ]);
      } else if (
        ts.isPropertyAccessExpression(node) &&
        ts.isMetaProperty(node.expression) &&
        node.expression.keywordToken === ts.SyntaxKind.ImportKeyword &&
        ts.isIdentifier(node.name) &&
        meta[node.name.text] !== undefined
      ) {
        return factory.createStringLiteral(meta[node.name.text]!);
      }
      return ts.visitEachChild(node, visit, context);
    };
    return ts.visitNode(sourceFile, visit) as TypeScript.SourceFile;
  };
}

/** Where `specifier` would lead from the model's own folder, as a URL the temporary file can import. */
function resolveSpecifier(specifier: string, modelPath: string, require: NodeJS.Require): string {
  if (specifier.startsWith("./") || specifier.startsWith("../") || specifier === "." || specifier === "..") {
    return pathToFileURL(path.resolve(path.dirname(modelPath), specifier)).href;
  }
  if (path.isAbsolute(specifier)) return pathToFileURL(specifier).href;
  // node:, file:, data: URLs and builtins stay as they are.
  if (/^[a-z][a-z0-9+.-]*:/i.test(specifier) || isBuiltin(specifier)) return specifier;
  try {
    return pathToFileURL(require.resolve(specifier)).href;
  } catch {
    return specifier; // the import reports it, with the model file named
  }
}

function describeDiagnostic(ts: typeof TypeScript, diagnostic: TypeScript.Diagnostic, modelPath: string): string {
  const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, " ");
  const where = locationOf(diagnostic, modelPath);
  return where === undefined ? text : `${where}: ${text}`;
}

function locationOf(diagnostic: TypeScript.Diagnostic, modelPath: string): string | undefined {
  if (diagnostic.file === undefined || diagnostic.start === undefined) return undefined;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  return `${modelPath}:${line + 1}:${character + 1}`;
}

/** The failure of importing the model file, located in it where possible. */
async function loadError(modelPath: string, files: readonly string[], error: unknown): Promise<OperonError> {
  const message = error instanceof Error ? error.message : String(error);
  const where = (await syntaxErrorLocation(modelPath)) ?? stackLocation(files, error, modelPath);
  const at = where !== undefined && !message.includes(where) ? ` (at ${where})` : "";
  return new OperonError("INVALID_ARG", `failed to load model file '${modelPath}': ${message}${at}`, { cause: error });
}

async function syntaxErrorLocation(modelPath: string): Promise<string | undefined> {
  // Any failed import of a JS file is checked, not only SyntaxErrors: loaders other than Node's (a test runner's) say it differently.
  if (path.extname(modelPath) === ".ts" || path.extname(modelPath) === ".mts") return undefined;
  try {
    const ts = await loadTypeScript();
    const source = await readFile(modelPath, "utf8");
    const output = ts.transpileModule(source, {
      fileName: modelPath,
      reportDiagnostics: true,
      compilerOptions: { allowJs: true },
    });
    const first = output.diagnostics?.find((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error);
    return first === undefined ? undefined : locationOf(first, modelPath);
  } catch {
    return undefined;
  }
}

/** "file:line:column" of the first stack frame inside one of `files`, reported as the model file. */
function stackLocation(files: readonly string[], error: unknown, modelPath: string): string | undefined {
  const stack = error instanceof Error ? (error.stack ?? "") : "";
  for (const line of stack.split("\n")) {
    const match = /((?:file:\/\/)?\/[^\s():]+):(\d+):(\d+)/.exec(line);
    if (match === undefined || match === null) continue;
    const location = match[1]!.replace(/\?.*$/, "");
    const file = location.startsWith("file://") ? fileURLToPath(location) : location;
    if (files.includes(file)) return `${modelPath}:${match[2]}:${match[3]}`;
  }
  return undefined;
}
