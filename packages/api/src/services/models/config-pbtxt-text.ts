import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { AppError } from "../../app-error.js";

/** The most config.pbtxt text one request may carry (Triton configs are a few KiB; the example ensemble's is 1.5). */
export const MAX_CONFIG_PBTXT_CHARS = 256 * 1024;

/**
 * config.pbtxt text (the console's editor, an uploaded file, a Triton model folder's) as Triton's JSON form of the
 * config, which the config checks take. Text that is not protobuf text of a ModelConfig is refused as
 * VALIDATION_FAILED at `configPbtxt`, with the parser's line and column ("config.pbtxt:3:7: unknown field 'dimz'").
 */
export function configOfPbtxt(text: string, model?: string): ModelConfigJson {
  try {
    return parsePbtxt(text, "config.pbtxt");
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new AppError(
      "VALIDATION_FAILED",
      `${model !== undefined ? `the config.pbtxt of model '${model}'` : "the config.pbtxt"} does not parse: ${message}`,
      {
        fieldErrors: [{ path: "configPbtxt", message }],
        cause: error,
      },
    );
  }
}
