"use client";

import Link from "next/link";
import { useRouter } from "next/navigation";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { modelHref } from "../models-table";
import { useInvalidateModels } from "../use-invalidate-models";
import { FolderUploadSection } from "./folder-upload-section";
import { UploadConfigForm } from "./upload-config-form";
import { UploadFileForm } from "./upload-file-form";
import { UploadProgress } from "./upload-progress";
import { useModelUpload } from "./use-model-upload";

export function UploadModelPage() {
  return (
    <>
      <PageHeader title="Upload a model">
        <p>
          An ONNX model, served by the ONNX Runtime backend. The file is checked (SHA-256) in your browser, sent in
          pieces, then configured and loaded. <Link href="/models">Back to models</Link>
        </p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <UploadFlow />
      </RequireRole>
    </>
  );
}

function UploadFlow() {
  const router = useRouter();
  const invalidate = useInvalidateModels();
  const upload = useModelUpload((result) => {
    void invalidate();
    router.push(modelHref(result.name));
  });
  const { state, progress } = upload;
  const transferring = state.step === "hashing" || state.step === "uploading" || state.step === "inspecting";
  return (
    <>
      {upload.notice ? (
        <p className="notice" role="status">
          {upload.notice}
        </p>
      ) : null}
      <section className="card">
        <UploadFileForm
          problem={state.step === "choose" ? upload.problem : null}
          busy={state.step !== "choose"}
          onStart={(file, name) => void upload.start(file, name)}
        />
      </section>
      {progress ? (
        <section className="card" aria-labelledby="transfer-title">
          <h2 id="transfer-title">
            {upload.open ? `Version ${upload.open.version} of ${upload.open.name}` : "Preparing the upload"}
          </h2>
          <div className="upload-progress-list">
            <UploadProgress
              label="SHA-256 of the file"
              doneBytes={progress.hashedBytes}
              totalBytes={progress.totalBytes}
            />
            <UploadProgress label="Upload progress" doneBytes={progress.sentBytes} totalBytes={progress.totalBytes} />
          </div>
          <p className="muted" role="status" aria-live="polite">
            {state.step === "hashing"
              ? "Computing the file's SHA-256…"
              : state.step === "uploading"
                ? "Sending the file…"
                : state.step === "inspecting"
                  ? "Checking the file and reading its inputs and outputs…"
                  : "The file arrived intact."}
          </p>
          {transferring ? (
            <div className="form-actions">
              <button type="button" className="button" onClick={() => void upload.cancel()}>
                Cancel upload
              </button>
            </div>
          ) : null}
        </section>
      ) : null}
      {state.step === "choose" && !progress ? (
        <section className="card">
          <FolderUploadSection
            onDone={(name) => {
              void invalidate();
              router.push(modelHref(name));
            }}
          />
        </section>
      ) : null}
      {state.step === "configure" || state.step === "finishing" ? (
        <section className="card">
          <UploadConfigForm
            signature={state.signature}
            problem={upload.problem}
            busy={state.step === "finishing"}
            onFinish={(config, description) => void upload.finish(state.signature, config, description)}
            onCancel={() => void upload.cancel()}
          />
        </section>
      ) : null}
    </>
  );
}
