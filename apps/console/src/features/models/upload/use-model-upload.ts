"use client";

import { useCallback, useEffect, useRef, useState } from "react";
import { apiProblem, type ApiProblem } from "@/lib/api-problem";
import type { RouterOutputs } from "@/lib/api-types";
import { useTRPCClient } from "@/lib/trpc";
import type { ConfigDraft } from "./config-draft";
import { fileSha256, UploadCancelled } from "./file-sha256";
import { sendChunks } from "./send-chunks";

export type UploadSignature = RouterOutputs["models"]["upload"]["inspect"];
export type FinishedUpload = RouterOutputs["models"]["upload"]["finish"];

/** Where an upload is: choosing the file, hashing it, sending it, checking it, configuring, finishing. */
export type UploadStep =
  | { step: "choose" }
  | { step: "hashing" }
  | { step: "uploading" }
  | { step: "inspecting" }
  | { step: "configure"; signature: UploadSignature }
  | { step: "finishing"; signature: UploadSignature };

/** Bytes hashed and sent so far, kept after the transfer so the page can still show it. */
export interface UploadProgressState {
  totalBytes: number;
  hashedBytes: number;
  sentBytes: number;
}

interface OpenUpload {
  uploadId: string;
  name: string;
  version: number;
}

/**
 * The upload flow against the API: SHA-256 in the browser, then
 * models.upload.begin → chunk (in order, each in its own request) → inspect
 * → finish, or abort on cancel or failure. A problem before the config step
 * ends the upload (the server discards it; we abort to be sure); a problem
 * at finish keeps it open so the config can be fixed.
 */
export function useModelUpload(onFinished: (result: FinishedUpload) => void) {
  const client = useTRPCClient();
  const [state, setState] = useState<UploadStep>({ step: "choose" });
  const [progress, setProgress] = useState<UploadProgressState | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [open, setOpen] = useState<OpenUpload | null>(null);
  const cancelled = useRef(false);
  const openRef = useRef<OpenUpload | null>(null);

  const remember = (upload: OpenUpload | null) => {
    openRef.current = upload;
    setOpen(upload);
  };

  const abortOpen = useCallback(async () => {
    const upload = openRef.current;
    openRef.current = null;
    setOpen(null);
    // NOT_FOUND (already discarded by the server) is as good as aborted.
    if (upload) await client.models.upload.abort.mutate({ uploadId: upload.uploadId }).catch(() => undefined);
  }, [client]);

  // Leaving the page mid-upload: stop sending and give the server's staging space back.
  useEffect(
    () => () => {
      cancelled.current = true;
      void abortOpen();
    },
    [abortOpen],
  );

  const start = async (file: File, name: string) => {
    cancelled.current = false;
    setProblem(null);
    setNotice(null);
    const totalBytes = file.size;
    setProgress({ totalBytes, hashedBytes: 0, sentBytes: 0 });
    setState({ step: "hashing" });
    try {
      const sha256 = await fileSha256(
        file,
        (hashedBytes) => setProgress({ totalBytes, hashedBytes, sentBytes: 0 }),
        () => cancelled.current,
      );
      if (cancelled.current) throw new UploadCancelled();
      const begun = await client.models.upload.begin.mutate({
        name,
        fileName: file.name,
        sizeBytes: file.size,
        sha256,
      });
      remember({ uploadId: begun.uploadId, name, version: begun.version });
      setState({ step: "uploading" });
      await sendChunks({
        file,
        chunkBytes: begun.chunkBytes,
        send: ({ offset, data }) =>
          client.models.upload.chunk.mutate(
            { uploadId: begun.uploadId, offset, data },
            { context: { unbatched: true } },
          ),
        onProgress: (sentBytes) => setProgress({ totalBytes, hashedBytes: totalBytes, sentBytes }),
        cancelled: () => cancelled.current,
      });
      setState({ step: "inspecting" });
      const signature = await client.models.upload.inspect.mutate({ uploadId: begun.uploadId });
      if (cancelled.current) throw new UploadCancelled();
      setState({ step: "configure", signature });
    } catch (error) {
      await abortOpen();
      setState({ step: "choose" });
      setProgress(null);
      if (error instanceof UploadCancelled) setNotice("Upload cancelled: nothing was stored.");
      else setProblem(apiProblem(error));
    }
  };

  const finish = async (signature: UploadSignature, config: ConfigDraft, description: string | undefined) => {
    const upload = openRef.current;
    if (!upload) return;
    setProblem(null);
    setState({ step: "finishing", signature });
    try {
      const result = await client.models.upload.finish.mutate(
        { uploadId: upload.uploadId, config, ...(description !== undefined ? { description } : {}) },
        { context: { unbatched: true } },
      );
      openRef.current = null;
      onFinished(result);
    } catch (error) {
      setProblem(apiProblem(error));
      setState({ step: "configure", signature });
    }
  };

  /** Stops sending (after the chunk in flight) or drops the upload waiting for its config; the server forgets it. */
  const cancel = async () => {
    cancelled.current = true;
    if (state.step === "configure") {
      await abortOpen();
      setProblem(null);
      setState({ step: "choose" });
      setProgress(null);
      setNotice("Upload cancelled: nothing was stored.");
    }
  };

  return { state, progress, problem, notice, open, start, finish, cancel };
}
