/** The API's rule for new model names (a folder name in the model store). */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;
export const MODEL_NAME_HINT = "Letters, digits, '_', '.' and '-'; not starting with '.'.";

/** A model name from a file name: "resnet 50.onnx" → "resnet_50". */
export function modelNameFromFileName(fileName: string): string {
  const base = fileName.replace(/\.onnx$/i, "");
  const cleaned = base.replace(/[^A-Za-z0-9_.-]+/g, "_").replace(/^\.+/, "");
  return cleaned.slice(0, 128) || "model";
}
