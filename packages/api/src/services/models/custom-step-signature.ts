import { isDataType } from "@operon/protocol/datatypes";
import ts from "typescript";
import type { CompileProblem } from "./custom-step-problem.js";

/**
 * What an uploaded custom step declares about its tensors: the literal of
 * its `export const operonSignature` (the model API's DeclaredSignature),
 * read from the parsed source without running anything, so the upload form
 * is prefilled from the code and a step uploaded without tensors takes the
 * declared ones. Only literals count (objects, arrays, strings, numbers,
 * `as const` / `satisfies`); anything computed is a problem at its
 * position, as compile problems are.
 */
export interface DeclaredStepTensor {
  name: string;
  datatype: string;
  dims: number[];
}

export interface DeclaredStepSignature {
  maxBatchSize: number;
  inputs: DeclaredStepTensor[];
  outputs: DeclaredStepTensor[];
}

export const SIGNATURE_EXPORT = "operonSignature";
const MAX_TENSORS = 16;

class SignatureProblem extends Error {
  constructor(
    readonly node: ts.Node,
    message: string,
  ) {
    super(message);
  }
}

/** The declared signature of `source` (null when it declares none), or the problems that keep it from counting. */
export function readDeclaredSignature(
  source: ts.SourceFile,
  file: string,
): { signature: DeclaredStepSignature | null; problems: CompileProblem[] } {
  const declaration = findExport(source);
  if (declaration === undefined) return { signature: null, problems: [] };
  try {
    if (declaration.initializer === undefined)
      throw new SignatureProblem(declaration, `${SIGNATURE_EXPORT} needs a value`);
    return { signature: checkSignature(literalOf(declaration.initializer), declaration), problems: [] };
  } catch (error) {
    if (!(error instanceof SignatureProblem)) throw error;
    const { line, character } = source.getLineAndCharacterOfPosition(error.node.getStart(source));
    return { signature: null, problems: [{ file, line: line + 1, column: character + 1, message: error.message }] };
  }
}

function findExport(source: ts.SourceFile): ts.VariableDeclaration | undefined {
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    if (!statement.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)) continue;
    for (const declaration of statement.declarationList.declarations) {
      if (ts.isIdentifier(declaration.name) && declaration.name.text === SIGNATURE_EXPORT) return declaration;
    }
  }
  return undefined;
}

/** The JSON value of a literal expression; SignatureProblem at the first part that is computed. */
function literalOf(node: ts.Expression): unknown {
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node))
    return literalOf(node.expression);
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (
    ts.isPrefixUnaryExpression(node) &&
    node.operator === ts.SyntaxKind.MinusToken &&
    ts.isNumericLiteral(node.operand)
  )
    return -Number(node.operand.text);
  if (ts.isArrayLiteralExpression(node)) return node.elements.map((element) => literalOf(element));
  if (ts.isObjectLiteralExpression(node)) {
    const value: Record<string, unknown> = {};
    for (const property of node.properties) {
      if (!ts.isPropertyAssignment(property) || !(ts.isIdentifier(property.name) || ts.isStringLiteral(property.name)))
        throw new SignatureProblem(
          property,
          `${SIGNATURE_EXPORT} must be written as a literal: name: value pairs only`,
        );
      value[property.name.text] = literalOf(property.initializer);
    }
    return value;
  }
  throw new SignatureProblem(
    node,
    `${SIGNATURE_EXPORT} must be written as a literal (objects, arrays, strings and numbers): this part is computed`,
  );
}

function checkSignature(value: unknown, at: ts.Node): DeclaredStepSignature {
  const fail = (message: string): never => {
    throw new SignatureProblem(at, `${SIGNATURE_EXPORT}: ${message}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("must be an object");
  const record = value as Record<string, unknown>;
  const maxBatchSize = record["maxBatchSize"] ?? 0;
  if (typeof maxBatchSize !== "number" || !Number.isInteger(maxBatchSize) || maxBatchSize < 0 || maxBatchSize > 1024)
    fail(`maxBatchSize must be a whole number from 0 to 1024, got ${JSON.stringify(maxBatchSize)}`);
  const tensors = (key: "inputs" | "outputs"): DeclaredStepTensor[] => {
    const list = record[key];
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_TENSORS)
      fail(`${key} must list 1 to ${MAX_TENSORS} tensors`);
    return (list as unknown[]).map((entry, i) => {
      const tensor = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
      const { name, datatype, dims } = tensor;
      if (typeof name !== "string" || name === "") fail(`${key}[${i}].name must be a non-empty string`);
      if (typeof datatype !== "string" || !isDataType(datatype))
        fail(`${key}[${i}].datatype must be a KServe datatype (FP32, INT64, BYTES…), got ${JSON.stringify(datatype)}`);
      if (!Array.isArray(dims) || !dims.every((dim) => Number.isInteger(dim) && (dim as number) >= -1))
        fail(`${key}[${i}].dims must be whole numbers, -1 for a dynamic size`);
      return { name: name as string, datatype: datatype as string, dims: dims as number[] };
    });
  };
  return { maxBatchSize: maxBatchSize as number, inputs: tensors("inputs"), outputs: tensors("outputs") };
}
