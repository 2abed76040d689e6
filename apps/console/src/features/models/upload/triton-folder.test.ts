import { describe, expect, it } from "vitest";
import { readTritonFolder } from "./triton-folder";

const file = (path: string, size = 10) => ({ name: path.split("/").at(-1)!, webkitRelativePath: path, size });

describe("readTritonFolder", () => {
  it("reads config.pbtxt and the version folders in order, ignoring other files", () => {
    const read = readTritonFolder([
      file("add_sub/2/model.onnx"),
      file("add_sub/config.pbtxt"),
      file("add_sub/1/model.onnx"),
      file("add_sub/README.md"),
      file("add_sub/labels.txt"),
    ]);
    expect(read.ok).toBe(true);
    if (!read.ok) return;
    expect(read.folder.name).toBe("add_sub");
    expect(read.folder.configFile.webkitRelativePath).toBe("add_sub/config.pbtxt");
    expect(read.folder.versions.map((entry) => [entry.version, entry.file.webkitRelativePath])).toEqual([
      [1, "add_sub/1/model.onnx"],
      [2, "add_sub/2/model.onnx"],
    ]);
  });

  it("names every problem at once", () => {
    const read = readTritonFolder([
      file("bad name/1/a.onnx"),
      file("bad name/1/b.onnx"),
      file("bad name/0/model.onnx"),
    ]);
    expect(read).toEqual({
      ok: false,
      problems: [
        "the folder's name “bad name” is not a model name: letters, digits, '_', '.' and '-' only",
        "bad name/config.pbtxt is missing: a Triton model folder has one",
        "bad name/1/ holds 2 ONNX files (a.onnx, b.onnx); keep one",
        "bad name/0/: versions start at 1",
      ],
    });
    expect(readTritonFolder([file("m/config.pbtxt")])).toEqual({
      ok: false,
      problems: ["no version folder with an ONNX file: Triton reads m/1/model.onnx, m/2/model.onnx, …"],
    });
    expect(readTritonFolder([file("a/config.pbtxt"), file("b/1/model.onnx")])).toMatchObject({ ok: false });
    expect(readTritonFolder([])).toMatchObject({ ok: false });
  });
});
