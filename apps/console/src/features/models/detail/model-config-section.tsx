"use client";

import Link from "next/link";
import { useState } from "react";
import { configSearchHref } from "@/features/config-search/config-search-types";
import type { ConfigDraft } from "../upload/config-draft";
import { EditConfigForm } from "./edit-config-form";
import { EditPbtxtForm } from "./edit-pbtxt-form";
import type { ModelDetail } from "./model-detail-types";

const SOURCE_NOTE = {
  gateway: "As the gateway serves it, with Triton's defaults filled in.",
  stored: "As stored in the model store (the model is not loaded).",
} as const;

/** Saves text as a file through a temporary link (no server round trip). */
function downloadText(text: string, fileName: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  URL.revokeObjectURL(url);
}

/** The config: to read as config.pbtxt (Triton's own format) or JSON, to download, and for uploads, to edit as either. */
export function ModelConfigSection({ model, canEdit }: { model: ModelDetail; canEdit: boolean }) {
  const [editing, setEditing] = useState<"json" | "pbtxt" | null>(null);
  const [format, setFormat] = useState<"pbtxt" | "json">(model.configPbtxt !== null ? "pbtxt" : "json");
  const [saved, setSaved] = useState(false);
  const editable = canEdit && model.source === "uploaded" && model.config !== null;
  return (
    <section className="card" aria-labelledby="config-title">
      <div className="section-header">
        <h2 id="config-title">Config</h2>
        <div className="model-actions">
          {editable && !editing ? (
            <>
              {model.configPbtxt !== null ? (
                <button
                  type="button"
                  className="button"
                  onClick={() => {
                    setSaved(false);
                    setEditing("pbtxt");
                  }}
                >
                  Edit config.pbtxt
                </button>
              ) : null}
              <button
                type="button"
                className="button"
                onClick={() => {
                  setSaved(false);
                  setEditing("json");
                }}
              >
                Edit as JSON
              </button>
            </>
          ) : null}
          {model.source === "uploaded" && !editing ? (
            <Link className="button" href={configSearchHref(model.name)}>
              Config search
            </Link>
          ) : null}
        </div>
      </div>
      {saved ? (
        <p className="form-success" role="status">
          Saved: the model was reloaded with the new config.
        </p>
      ) : null}
      {model.config === null ? (
        <p className="muted">Not known while the model is not loaded (it comes from its repository folder).</p>
      ) : editing === "pbtxt" && model.configPbtxt !== null ? (
        <EditPbtxtForm
          name={model.name}
          text={model.configPbtxt}
          onDone={(didSave) => {
            setEditing(null);
            setSaved(didSave);
          }}
        />
      ) : editing ? (
        <EditConfigForm
          name={model.name}
          config={model.config as ConfigDraft}
          onDone={(didSave) => {
            setEditing(null);
            setSaved(didSave);
          }}
        />
      ) : (
        <>
          {model.configSource ? (
            <p className="muted">
              {format === "pbtxt" && model.source === "uploaded"
                ? "config.pbtxt as stored with the model (the gateway fills in Triton's defaults; JSON shows them)."
                : SOURCE_NOTE[model.configSource]}
            </p>
          ) : null}
          <div className="config-toolbar">
            {model.configPbtxt !== null ? (
              <fieldset className="segmented segmented-small">
                <legend>Show as</legend>
                <div className="segmented-options">
                  {(["pbtxt", "json"] as const).map((option) => (
                    <label key={option} className="segmented-option">
                      <input
                        type="radio"
                        name="config-format"
                        value={option}
                        checked={format === option}
                        onChange={() => setFormat(option)}
                      />
                      <span>{option === "pbtxt" ? "config.pbtxt" : "JSON"}</span>
                    </label>
                  ))}
                </div>
              </fieldset>
            ) : null}
            <button
              type="button"
              className="button"
              onClick={() =>
                format === "pbtxt" && model.configPbtxt !== null
                  ? downloadText(model.configPbtxt, "config.pbtxt")
                  : downloadText(JSON.stringify(model.config, null, 2), `${model.name}-config.json`)
              }
            >
              Download {format === "pbtxt" && model.configPbtxt !== null ? "config.pbtxt" : "JSON"}
            </button>
          </div>
          <pre
            className="config-view"
            tabIndex={0}
            aria-label={format === "pbtxt" && model.configPbtxt !== null ? "Config as config.pbtxt" : "Config JSON"}
          >
            {format === "pbtxt" && model.configPbtxt !== null
              ? model.configPbtxt
              : JSON.stringify(model.config, null, 2)}
          </pre>
          {model.source === "repository" ? (
            <p className="muted small">Repository models are changed in their folder, not here.</p>
          ) : null}
        </>
      )}
    </section>
  );
}
