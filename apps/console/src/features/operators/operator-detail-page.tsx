"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useMemo } from "react";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { formatDateTime } from "@/lib/format";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { canonicalSpec } from "@operon/operator-spec/canonical-spec";
import { compactJson } from "./compact-json";
import { DeleteOperatorButton } from "./delete-operator-button";
import { OperatorGraph } from "./operator-graph";
import { operatorHref, sourceLabel, stateLabel, type OperatorDetail } from "./operator-labels";
import { OperatorVersions } from "./operator-versions";
import { specGraph } from "@operon/operator-spec/spec-graph";
import { TryItPanel } from "./try-it-panel";
import { graphPorts } from "./graph-ports";
import { useModelSignatures } from "./use-model-signatures";
import { OperatorCapacitySection } from "./operator-capacity-section";
import { OperatorBreakersSection } from "./operator-breakers-section";
import { LatestPerfReport } from "../perf/latest-perf-report";
import { PerfInputsSection } from "../perf/perf-inputs-section";
import { BreakableText } from "@/components/breakable-text";

export function OperatorDetailPage({ name }: { name: string }) {
  const trpc = useTRPC();
  const operator = useQuery(trpc.operators.get.queryOptions({ name }));
  return (
    <>
      <PageHeader title={name}>
        <p>
          <Link href="/operators">All operators</Link>
        </p>
      </PageHeader>
      <QueryView query={operator} loadingLabel="Loading the operator…">
        {(detail) => <OperatorDetailView detail={detail} />}
      </QueryView>
    </>
  );
}

function OperatorDetailView({ detail }: { detail: OperatorDetail }) {
  const user = useSignedInUser();
  const router = useRouter();
  const canManage = hasRole(user.role, "ENGINEER");
  const graph = useMemo(() => specGraph(detail.spec), [detail.spec]);
  const signatures = useModelSignatures(detail.spec);
  const ports = useMemo(() => graphPorts(detail.spec, signatures), [detail.spec, signatures]);
  return (
    <>
      <section className="card" aria-labelledby="about-title">
        <div className="section-header">
          <h2 id="about-title">About</h2>
          {canManage && detail.stored ? (
            <div className="toggles">
              <Link className="button" href={operatorHref(detail.name, "/edit")}>
                Edit spec
              </Link>
              <DeleteOperatorButton name={detail.name} onDeleted={() => router.push("/operators")} />
            </div>
          ) : null}
        </div>
        {detail.description ? <p>{detail.description}</p> : <p className="muted">No description.</p>}
        <dl className="facts">
          <div className="fact">
            <dt>Source</dt>
            <dd>{sourceLabel(detail.source)}</dd>
          </div>
          <div className="fact">
            <dt>State</dt>
            <dd>
              <span className={`status status-${detail.state.toLowerCase()}`}>
                {stateLabel(detail.state, detail.unreadyModels)}
              </span>
            </dd>
          </div>
          <div className="fact">
            <dt>Latest version</dt>
            <dd>{detail.latestVersion ?? "—"}</dd>
          </div>
          <div className="fact">
            <dt>Models used</dt>
            <dd>{detail.models.length > 0 ? <BreakableText text={detail.models.join(", ")} /> : "—"}</dd>
          </div>
          <div className="fact">
            <dt>Owner</dt>
            <dd>{detail.owner ? <BreakableText text={detail.owner.email} /> : "—"}</dd>
          </div>
          <div className="fact">
            <dt>Updated</dt>
            <dd>{formatDateTime(detail.updatedAt)}</dd>
          </div>
        </dl>
        {!detail.stored ? (
          <p className="notice">
            {detail.source === "repository"
              ? "An ensemble of the model repository: shown read-only. Change its config.pbtxt to change it."
              : "Registered at the gateway directly, not stored here: shown read-only."}
          </p>
        ) : null}
        <OperatorGraph graph={graph} ports={ports} />
        <details>
          <summary>Spec (JSON)</summary>
          <pre className="code-block">{compactJson(canonicalSpec(detail.spec))}</pre>
        </details>
      </section>
      {detail.state !== "NOT_SERVED" ? <OperatorCapacitySection name={detail.name} /> : null}
      {detail.state !== "NOT_SERVED" ? <OperatorBreakersSection name={detail.name} /> : null}
      {canManage ? (
        detail.state === "SERVED" ? (
          <TryItPanel name={detail.name} spec={detail.spec} />
        ) : (
          <p className="notice">The gateway does not serve this operator now, so it cannot be tried.</p>
        )
      ) : (
        <p className="notice">Trying an operator needs the engineer role.</p>
      )}
      <LatestPerfReport kind="OPERATOR" name={detail.name} canCancel={canManage} />
      {detail.state === "SERVED" ? <PerfInputsSection kind="OPERATOR" name={detail.name} canEdit={canManage} /> : null}
      {detail.stored ? <OperatorVersions name={detail.name} latest={detail.latestVersion} /> : null}
    </>
  );
}
