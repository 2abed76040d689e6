"use client";

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { CopyButton } from "@/components/copy-button";
import { useTRPC } from "@/lib/trpc";
import { clientSnippets } from "./client-snippets";
import type { CreatedApiKey } from "./create-api-key-form";

const KEY_INPUT_ID = "new-api-key";

/** The new key, shown once: the API keeps only its hash. */
export function NewApiKeyNotice({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <section className="notice notice-success new-key" aria-labelledby="new-key-title">
      <h2 id="new-key-title" ref={heading} tabIndex={-1}>
        Key “{created.summary.name}” created
      </h2>
      <p>
        <strong>Copy it now: you will not see it again.</strong> Operon keeps only a hash of it. Clients send it as{" "}
        <code>Authorization: Bearer &lt;key&gt;</code>.
      </p>
      <div className="key-row">
        <label htmlFor={KEY_INPUT_ID} className="visually-hidden">
          The new API key
        </label>
        <input
          id={KEY_INPUT_ID}
          className="key-value"
          readOnly
          value={created.key}
          spellCheck={false}
          onFocus={(event) => event.currentTarget.select()}
        />
        <CopyButton text={created.key} fallbackTargetId={KEY_INPUT_ID} />
      </div>
      <ClientLines apiKey={created.key} />
      <button type="button" className="button" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}

/** The key at work: one call to the gateway with curl and with Triton's Python client, ready to paste. */
function ClientLines({ apiKey }: { apiKey: string }) {
  const trpc = useTRPC();
  const endpoints = useQuery(trpc.gateway.endpoints.queryOptions());
  if (!endpoints.data) return null;
  const lines = clientSnippets(endpoints.data.httpUrl, apiKey);
  return (
    <div className="client-lines">
      <p>Try it against the gateway (its inference statistics):</p>
      {(
        [
          ["new-key-curl", "With curl", lines.curl],
          ["new-key-python", "With Triton's Python client (pip install tritonclient[http])", lines.python],
        ] as const
      ).map(([id, label, line]) => (
        <div key={id} className="client-line">
          <label htmlFor={id}>{label}</label>
          <div className="key-row">
            <input
              id={id}
              className="key-value"
              readOnly
              value={line}
              spellCheck={false}
              onFocus={(event) => event.currentTarget.select()}
            />
            <CopyButton text={line} fallbackTargetId={id} />
          </div>
        </div>
      ))}
    </div>
  );
}
