"use client";

import { useQuery } from "@tanstack/react-query";
import { QueryView } from "@/components/states/query-view";
import { formatDateTime } from "@/lib/format";
import { useTRPC } from "@/lib/trpc";
import { canonicalSpec } from "@operon/operator-spec/canonical-spec";
import { compactJson } from "./compact-json";

/** Every stored version, newest first, each with its spec (opened on demand). */
export function OperatorVersions({ name, latest }: { name: string; latest: number | null }) {
  const trpc = useTRPC();
  const versions = useQuery(trpc.operators.versions.queryOptions({ name }));
  return (
    <section className="card" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <QueryView
        query={versions}
        loadingLabel="Loading versions…"
        isEmpty={(list) => list.length === 0}
        empty={{ title: "No versions stored" }}
      >
        {(list) => (
          <ol className="version-list">
            {list.map((version) => (
              <li key={version.version}>
                <details>
                  <summary>
                    <strong>Version {version.version}</strong>
                    {version.version === latest ? <span className="badge badge-quiet">served</span> : null}
                    <span className="muted">
                      {" "}
                      · {formatDateTime(version.createdAt)}
                      {version.createdBy ? ` · ${version.createdBy.email}` : ""}
                    </span>
                  </summary>
                  <pre className="code-block">{compactJson(canonicalSpec(version.spec))}</pre>
                </details>
              </li>
            ))}
          </ol>
        )}
      </QueryView>
    </section>
  );
}
