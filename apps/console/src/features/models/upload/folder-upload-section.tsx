"use client";

import { type FormEvent, useId, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { apiProblem } from "@/lib/api-problem";
import { formatBytes } from "@/lib/number-format";
import { useTRPCClient } from "@/lib/trpc";
import { fileSha256 } from "./file-sha256";
import { sendChunks } from "./send-chunks";
import { readTritonFolder, type TritonFolder } from "./triton-folder";
import { UploadProgress } from "./upload-progress";

type Progress = { version: number; index: number; of: number; doneBytes: number; totalBytes: number; what: string };

/**
 * A Triton model folder as one upload (issue 27, item 9): config.pbtxt and its version folders, picked as a folder.
 * Each version goes through the upload API in turn (SHA-256, begin with its version number, chunks) and is finished
 * with the folder's config.pbtxt text, which the API parses and checks against the file. A version that fails is
 * aborted (the server keeps nothing of it) and the page says which versions were stored before it.
 */
export function FolderUploadSection({ onDone }: { onDone: (name: string) => void }) {
  const client = useTRPCClient();
  const id = useId();
  const [folder, setFolder] = useState<TritonFolder<File> | null>(null);
  const [problems, setProblems] = useState<string[]>([]);
  const [failure, setFailure] = useState<string | undefined>();
  const [progress, setProgress] = useState<Progress | null>(null);

  const pick = (files: FileList | null) => {
    setFailure(undefined);
    const read = readTritonFolder(Array.from(files ?? []));
    setFolder(read.ok ? read.folder : null);
    setProblems(read.ok ? [] : read.problems);
  };

  const upload = async (picked: TritonFolder<File>) => {
    setFailure(undefined);
    const configPbtxt = await picked.configFile.text();
    const stored: number[] = [];
    for (const [index, { version, file }] of picked.versions.entries()) {
      const step = (what: string, doneBytes: number) =>
        setProgress({ version, index, of: picked.versions.length, doneBytes, totalBytes: file.size, what });
      let uploadId: string | undefined;
      try {
        step("Computing the SHA-256", 0);
        const sha256 = await fileSha256(file, (done) => step("Computing the SHA-256", done));
        const begun = await client.models.upload.begin.mutate({
          name: picked.name,
          fileName: file.name,
          sizeBytes: file.size,
          sha256,
          version,
        });
        uploadId = begun.uploadId;
        step("Sending", 0);
        await sendChunks({
          file,
          chunkBytes: begun.chunkBytes,
          send: ({ offset, data }) =>
            client.models.upload.chunk.mutate(
              { uploadId: begun.uploadId, offset, data },
              { context: { unbatched: true } },
            ),
          onProgress: (sent) => step("Sending", sent),
          cancelled: () => false,
        });
        step("Loading with config.pbtxt", file.size);
        await client.models.upload.finish.mutate(
          { uploadId: begun.uploadId, configPbtxt },
          { context: { unbatched: true } },
        );
        stored.push(version);
      } catch (error) {
        if (uploadId !== undefined) await client.models.upload.abort.mutate({ uploadId }).catch(() => undefined);
        setProgress(null);
        setFailure(
          `Version ${version} was not stored: ${apiProblem(error).message}${stored.length > 0 ? ` (version${stored.length === 1 ? "" : "s"} ${stored.join(", ")} ${stored.length === 1 ? "was" : "were"} stored)` : ""}`,
        );
        return;
      }
    }
    setProgress(null);
    onDone(picked.name);
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (folder === null) {
      if (problems.length === 0) setProblems(["choose a model folder"]);
      return;
    }
    void upload(folder);
  };

  const busy = progress !== null;
  const problemsId = `${id}-problems`;
  return (
    <form onSubmit={submit} noValidate className="form" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`} className="form-title">
        Or a Triton model folder
      </h2>
      <p className="muted">
        A folder as Triton reads it: <code>config.pbtxt</code> and version folders (<code>1/model.onnx</code>,{" "}
        <code>2/model.onnx</code>, …), uploaded as one: each version in turn, with the folder's config.pbtxt. The
        folder's name is the model's.
      </p>
      <div className="field">
        <label htmlFor={`${id}-folder`}>Model folder</label>
        <input
          id={`${id}-folder`}
          type="file"
          multiple
          disabled={busy}
          // Chromium, Firefox and Safari pick a whole folder with this (React has no typed prop for it).
          {...{ webkitdirectory: "" }}
          aria-invalid={problems.length > 0 ? true : undefined}
          aria-describedby={problems.length > 0 ? problemsId : undefined}
          onChange={(event) => pick(event.currentTarget.files)}
        />
        {problems.length > 0 ? (
          <ul id={problemsId} className="field-error field-error-list">
            {problems.map((problem) => (
              <li key={problem}>{problem}</li>
            ))}
          </ul>
        ) : null}
      </div>
      {folder ? (
        <p role="status">
          <strong>{folder.name}</strong>: config.pbtxt and version{folder.versions.length === 1 ? "" : "s"}{" "}
          {folder.versions
            .map(({ version, file }) => `${version} (${file.name}, ${formatBytes(file.size)})`)
            .join(", ")}
          .
        </p>
      ) : null}
      {progress ? (
        <div className="upload-progress-list">
          <UploadProgress
            label={`${progress.what}: version ${progress.version} (${progress.index + 1} of ${progress.of})`}
            doneBytes={progress.doneBytes}
            totalBytes={progress.totalBytes}
          />
        </div>
      ) : null}
      <FormAlert message={failure} />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? "Uploading the folder…" : "Upload folder"}
        </button>
      </div>
    </form>
  );
}
