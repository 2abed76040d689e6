"use client";

import { useRef, useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { fieldMessage, formMessage, type ApiProblem } from "@/lib/api-problem";
import { FileDropZone } from "./file-drop-zone";
import { MODEL_NAME_HINT, MODEL_NAME_PATTERN, modelNameFromFileName } from "./model-name";

const FIELDS = ["name", "version", "fileName", "sizeBytes", "sha256"];

/** Step one: the file and the model's name (from the file name until the person edits it). */
export function UploadFileForm({
  problem,
  busy,
  onStart,
}: {
  problem: ApiProblem | null;
  busy: boolean;
  onStart: (file: File, name: string) => void;
}) {
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [nameEdited, setNameEdited] = useState(false);
  const [localProblem, setLocalProblem] = useState<{ file?: string; name?: string } | null>(null);

  const form = useRef<HTMLFormElement>(null);

  const chooseFile = (chosen: File) => {
    setFile(chosen);
    setLocalProblem(null);
    if (nameEdited) return;
    // webkitRelativePath names the folders of a dropped folder; model.onnx alone says nothing.
    const suggested = modelNameFromFileName(chosen.name, chosen.webkitRelativePath);
    setName(suggested);
    if (suggested === "") {
      const field = form.current?.elements.namedItem("name");
      if (field instanceof HTMLInputElement) field.focus();
    }
  };
  const asking = file !== null && name === "" && !nameEdited;

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const found: { file?: string; name?: string } = {};
    if (!file) found.file = "choose a model file";
    else if (!/\.onnx$/i.test(file.name)) found.file = "must be an .onnx file";
    if (!MODEL_NAME_PATTERN.test(name)) found.name = name === "" ? "required" : MODEL_NAME_HINT;
    if (found.file || found.name) {
      setLocalProblem(found);
      return;
    }
    setLocalProblem(null);
    onStart(file!, name);
  };

  const fileError =
    localProblem?.file ??
    fieldMessage(problem, "fileName") ??
    fieldMessage(problem, "sizeBytes") ??
    fieldMessage(problem, "sha256");
  const nameError = localProblem?.name ?? fieldMessage(problem, "name") ?? fieldMessage(problem, "version");
  return (
    <form ref={form} onSubmit={submit} noValidate className="form" aria-labelledby="file-title">
      <h2 id="file-title" className="form-title">
        Choose the model
      </h2>
      <FileDropZone
        label="Model file (.onnx)"
        accept=".onnx"
        file={file}
        onFile={chooseFile}
        error={fileError}
        disabled={busy}
      />
      <TextField
        label="Model name"
        name="name"
        value={name}
        required
        maxLength={128}
        autoComplete="off"
        spellCheck={false}
        disabled={busy}
        hint={
          asking
            ? `“${file.name}” does not say which model it is: name it. ${MODEL_NAME_HINT}`
            : `${MODEL_NAME_HINT} An existing upload's name adds a new version.`
        }
        error={nameError}
        onChange={(event) => {
          setName(event.target.value);
          setNameEdited(true);
        }}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy}>
          Upload
        </button>
      </div>
    </form>
  );
}
