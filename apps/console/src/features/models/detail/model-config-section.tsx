"use client";

import Link from "next/link";
import { useState } from "react";
import { configSearchHref } from "@/features/config-search/config-search-types";
import type { ConfigDraft } from "../upload/config-draft";
import { EditConfigForm } from "./edit-config-form";
import type { ModelDetail } from "./model-detail-types";

const SOURCE_NOTE = {
  gateway: "As the gateway serves it, with Triton's defaults filled in.",
  stored: "As stored in the model store (the model is not loaded).",
} as const;

/** The config: to read, and for uploads, to edit as JSON. */
export function ModelConfigSection({ model, canEdit }: { model: ModelDetail; canEdit: boolean }) {
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(false);
  const editable = canEdit && model.source === "uploaded" && model.config !== null;
  return (
    <section className="card" aria-labelledby="config-title">
      <div className="section-header">
        <h2 id="config-title">Config</h2>
        <div className="model-actions">
          {editable && !editing ? (
            <button
              type="button"
              className="button"
              onClick={() => {
                setSaved(false);
                setEditing(true);
              }}
            >
              Edit as JSON
            </button>
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
      ) : editing ? (
        <EditConfigForm
          name={model.name}
          config={model.config as ConfigDraft}
          onDone={(didSave) => {
            setEditing(false);
            setSaved(didSave);
          }}
        />
      ) : (
        <>
          {model.configSource ? <p className="muted">{SOURCE_NOTE[model.configSource]}</p> : null}
          <pre className="config-view" tabIndex={0} aria-label="Config JSON">
            {JSON.stringify(model.config, null, 2)}
          </pre>
          {model.source === "repository" ? (
            <p className="muted small">Repository models are changed in their folder, not here.</p>
          ) : null}
        </>
      )}
    </section>
  );
}
