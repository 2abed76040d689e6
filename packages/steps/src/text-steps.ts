import { Tokenizer } from "@huggingface/tokenizers";
import { expectTensor, type StepFactory, StepInputError, type StepRun, stepInput } from "./step-tensor.js";

/**
 * Text steps: tokenization with a Hugging Face tokenizer.json, through
 * @huggingface/tokenizers (the pure-JS port Hugging Face maintains; no
 * native code, no download: the file comes from the model's folder).
 * Padding and truncation are applied here, to maxLength, so the output
 * shape is fixed whatever the file's own padding section says.
 */

interface TokenizeParams {
  file: string;
  maxLength: number;
  padding: "max_length" | "none";
  truncation: boolean;
  addSpecialTokens: boolean;
}

/** The pad id: the file's padding section, else a [PAD] / <pad> token, else 0. */
function padIdOf(json: Record<string, unknown>, tokenizer: Tokenizer): number {
  const padding = json["padding"] as { pad_id?: unknown } | null | undefined;
  if (typeof padding?.pad_id === "number") return padding.pad_id;
  for (const token of ["[PAD]", "<pad>", "<|pad|>"]) {
    const id = tokenizer.token_to_id(token);
    if (id !== undefined) return id;
  }
  return 0;
}

const tokenize: StepFactory = async (params: TokenizeParams, env): Promise<StepRun> => {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse((await env.readFile(params.file)).toString("utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new StepInputError(
      `params.file: cannot read the tokenizer file '${params.file}': ${(error as Error).message}`,
    );
  }
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(json, {});
  } catch (error) {
    throw new StepInputError(
      `params.file: '${params.file}' is not a tokenizer.json this library reads: ${(error as Error).message}`,
    );
  }
  const padId = padIdOf(json, tokenizer);
  return async (inputs) => {
    const text = stepInput(inputs, "text");
    expectTensor(text, "input 'text'", ["BYTES"]);
    const elements = text.data as Buffer[];
    if (elements.length !== 1)
      throw new StepInputError(`input 'text' must hold one string per sample, got ${elements.length}`);
    const encoding = tokenizer.encode(elements[0]!.toString("utf8"), { add_special_tokens: params.addSpecialTokens });
    let ids: number[] = encoding.ids;
    let mask: number[] = encoding.attention_mask;
    if (ids.length > params.maxLength) {
      if (!params.truncation) {
        throw new StepInputError(
          `input 'text' has ${ids.length} tokens, more than maxLength ${params.maxLength} (truncation is off)`,
        );
      }
      ids = ids.slice(0, params.maxLength);
      mask = mask.slice(0, params.maxLength);
    }
    const length = params.padding === "max_length" ? params.maxLength : ids.length;
    const outIds = new BigInt64Array(length).fill(BigInt(padId));
    const outMask = new BigInt64Array(length);
    ids.forEach((id: number, i: number) => {
      outIds[i] = BigInt(id);
      outMask[i] = BigInt(mask[i] ?? 1);
    });
    return {
      input_ids: { datatype: "INT64", shape: [length], data: outIds },
      attention_mask: { datatype: "INT64", shape: [length], data: outMask },
    };
  };
};

export const TEXT_STEPS: Record<string, StepFactory> = { "text.tokenize": tokenize };
