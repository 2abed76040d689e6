/** The API's rule for new model names (a folder name in the model store). */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;
export const MODEL_NAME_HINT = "Letters, digits, '_', '.' and '-'; not starting with '.'.";

/** File names that say nothing about which model it is (Triton's repository layout calls every file model.onnx). */
const GENERIC_NAMES = /^(model|onnx|file|export|output|untitled)?$/i;

function cleanName(text: string): string {
  return text
    .replace(/\.onnx$/i, "")
    .replace(/[^A-Za-z0-9_.-]+/g, "_")
    .replace(/^\.+/, "")
    .slice(0, 128);
}

/**
 * A model name suggested for a chosen file: "resnet 50.onnx" → "resnet_50".
 * A generic file name (model.onnx) takes the name of its folder when the
 * browser gives one (a dropped folder: "resnet50/1/model.onnx" → "resnet50",
 * skipping version folders); otherwise "" (the person is asked to name it).
 */
export function modelNameFromFileName(fileName: string, relativePath = ""): string {
  const fromFile = cleanName(fileName);
  if (!GENERIC_NAMES.test(fromFile)) return fromFile;
  const folders = relativePath.split("/").slice(0, -1).reverse();
  const folder = folders.find((part) => !/^\d+$/.test(part) && cleanName(part) !== "");
  return folder === undefined ? "" : cleanName(folder);
}
