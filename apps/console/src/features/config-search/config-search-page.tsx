"use client";

import { formatDateTime } from "@/lib/format";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useState } from "react";
import { FactList } from "@/components/fact-list";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { ConfirmButton } from "@/components/confirm-button";
import { formatLatencyUs, formatMoney, formatMs, formatNumber, perMillionInferences } from "@/lib/number-format";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { CandidatesScatterChart } from "./candidates-scatter-chart";
import { ApplyCandidateButton } from "./apply-candidate-button";
import { CandidatesTable } from "./candidates-table";
import {
  OBJECTIVE_LABELS,
  searchStatusLabel,
  type ConfigSearchDetail,
  type ConfigSearchSummary,
} from "./config-search-types";
import { candidateLabel } from "./search-view-model";
import { StartSearchForm } from "./start-search-form";

const POLL_MS = 1000;

/**
 * A model's config searches: start one (engineers), follow it, read its
 * candidates on a throughput-vs-p99 chart and a table, and apply the
 * recommended (or another measured) candidate as the model's config.
 */
export function ConfigSearchPage({ model }: { model: string }) {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const canManage = hasRole(user.role, "ENGINEER");
  const [chosen, setChosen] = useState<string | null>(null);
  const searches = useQuery({
    ...trpc.configSearch.list.queryOptions({ model }),
    refetchInterval: (query) => (query.state.data?.some((search) => search.status === "RUNNING") ? POLL_MS : false),
  });
  const running = searches.data?.some((search) => search.status === "RUNNING") ?? false;
  const selected = chosen ?? searches.data?.[0]?.id ?? null;
  return (
    <>
      <PageHeader title={`Config search: ${model}`}>
        <p>
          <Link href={`/models/${encodeURIComponent(model)}`}>Back to the model</Link>
        </p>
        <p className="muted">
          Measures configs of this model (instance count, max batch size, dynamic batching) one dimension at a time,
          beside the live model, and recommends the best under your objective and p99 budget.
        </p>
      </PageHeader>
      {canManage ? (
        <section className="card">
          <StartSearchForm model={model} disabled={running} onStarted={setChosen} />
        </section>
      ) : null}
      <QueryView
        query={searches}
        loadingLabel="Loading the searches…"
        isEmpty={(list) => list.length === 0}
        empty={{ title: "No config search of this model yet", body: canManage ? <p>Start one above.</p> : null }}
      >
        {(list) => (
          <>
            {list.length > 1 ? <SearchPicker searches={list} selected={selected} onSelect={setChosen} /> : null}
            {selected !== null ? <SearchDetail key={selected} id={selected} canManage={canManage} /> : null}
          </>
        )}
      </QueryView>
    </>
  );
}

function SearchPicker({
  searches,
  selected,
  onSelect,
}: {
  searches: readonly ConfigSearchSummary[];
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  return (
    <section className="card">
      <div className="field">
        <label htmlFor="search-picker">Search</label>
        <select id="search-picker" value={selected ?? ""} onChange={(event) => onSelect(event.target.value)}>
          {searches.map((search) => (
            <option key={search.id} value={search.id}>
              {formatDateTime(search.createdAt)}: {searchStatusLabel(search.status)}, {search.candidateCount} candidates
            </option>
          ))}
        </select>
      </div>
    </section>
  );
}

function SearchDetail({ id, canManage }: { id: string; canManage: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const search = useQuery({
    ...trpc.configSearch.get.queryOptions({ id }),
    staleTime: 0,
    refetchInterval: (query) =>
      query.state.data === undefined || query.state.data.status === "RUNNING" ? POLL_MS : false,
  });
  const status = search.data?.status;
  useEffect(() => {
    if (status !== undefined && status !== "RUNNING")
      void queryClient.invalidateQueries({ queryKey: trpc.configSearch.list.pathKey() });
  }, [status, queryClient, trpc]);
  return (
    <QueryView query={search} loadingLabel="Loading the search…">
      {(detail) => <SearchView search={detail} canManage={canManage} />}
    </QueryView>
  );
}

function SearchView({ search, canManage }: { search: ConfigSearchDetail; canManage: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const cancel = useMutation(trpc.configSearch.cancel.mutationOptions());
  const [applied, setApplied] = useState<{ index: number } | null>(null);
  const apply = useMutation(
    trpc.configSearch.applyCandidate.mutationOptions({
      onSuccess: async (result) => {
        setApplied({ index: result.appliedIndex });
        // The model's page must not draw the config it cached before the change, even for a moment.
        queryClient.removeQueries({ queryKey: trpc.models.get.queryKey({ name: search.model }) });
        await Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.configSearch.pathKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.models.pathKey() }),
        ]);
      },
    }),
  );
  const running = search.status === "RUNNING";
  const budgetMs = search.p99BudgetUs / 1000;
  const recommended =
    search.recommendedIndex === null
      ? undefined
      : search.candidates.find((candidate) => candidate.index === search.recommendedIndex);
  const currency = search.hardware?.currency ?? null;
  const doApply = canManage && !running ? (index: number) => apply.mutateAsync({ id: search.id, index }) : undefined;
  return (
    <>
      <section className="card" aria-labelledby="search-facts-title">
        <div className="section-header">
          <h2 id="search-facts-title">Search</h2>
          {running && canManage ? (
            <ConfirmButton
              label="Cancel search"
              title="Stop this config search?"
              description={
                <p>Measuring stops now. The candidates already measured are kept, and the shadow model is unloaded.</p>
              }
              confirmLabel="Stop the search"
              onConfirm={() => cancel.mutateAsync({ id: search.id })}
            />
          ) : null}
        </div>
        <p role="status" aria-live="polite">
          {running
            ? `Measuring candidate ${search.candidateCount + 1} of at most ${search.plan.bounds.maxCandidates}${search.measuring ? `: ${candidateLabel(search.measuring.candidate)}${search.measuring.concurrency !== null ? ` at concurrency ${search.measuring.concurrency}` : ""}` : ""}`
            : `${searchStatusLabel(search.status)}: ${search.candidates.length} ${search.candidates.length === 1 ? "candidate" : "candidates"} measured`}
        </p>
        {running ? (
          <progress aria-label="Search progress" max={search.plan.bounds.maxCandidates} value={search.candidateCount} />
        ) : null}
        {search.error && !running ? (
          <p className={search.status === "FAILED" ? "form-alert" : "notice"}>{search.error}</p>
        ) : null}
        <FactList
          facts={[
            ["Objective", OBJECTIVE_LABELS[search.objective]],
            ["p99 budget", formatMs(budgetMs)],
            [
              "Priced with",
              search.hardware
                ? `${search.hardware.name} (${formatMoney(search.hardware.costPerHour, search.hardware.currency)}/h)`
                : "no hardware profile",
            ],
            [
              "Stopped because",
              search.stopReason === null
                ? "—"
                : search.stopReason === "completed"
                  ? "every dimension settled"
                  : search.stopReason === "candidate-limit"
                    ? "the candidate limit"
                    : "the time limit",
            ],
            ["Started", formatDateTime(search.createdAt)],
          ]}
        />
      </section>
      {!running ? (
        <section className="card" aria-labelledby="recommendation-title">
          <h2 id="recommendation-title">Recommendation</h2>
          {recommended ? (
            <div className="search-recommendation">
              <p>
                <strong>
                  #{recommended.index + 1}: {candidateLabel(recommended)}
                </strong>
                <br />
                {formatNumber(recommended.throughput)} inferences/s at p99 {formatLatencyUs(recommended.latencyP99Us)}
                {currency !== null
                  ? `, ${formatMoney(perMillionInferences(recommended.costPer1000), currency)} per 1M inferences`
                  : ""}
              </p>
              {doApply ? (
                <ApplyCandidateButton
                  candidate={recommended}
                  model={search.model}
                  label="Apply recommended config"
                  className="button button-primary"
                  onApply={doApply}
                />
              ) : null}
            </div>
          ) : (
            <p className="notice">
              No candidate met the p99 budget of {formatMs(budgetMs)}, so none is recommended. A measured candidate can
              still be applied from the table.
            </p>
          )}
          {applied !== null ? (
            <p className="form-success" role="status">
              Applied #{applied.index + 1}: the model was reloaded with its new config.{" "}
              <Link href={`/models/${encodeURIComponent(search.model)}`}>See the model&apos;s config</Link>
            </p>
          ) : search.appliedIndex !== null ? (
            <p className="muted">
              #{search.appliedIndex + 1} was applied {search.appliedAt ? formatDateTime(search.appliedAt) : ""}.
            </p>
          ) : null}
        </section>
      ) : null}
      {search.candidates.length === 0 ? (
        <section className="card">
          <EmptyState title={running ? "No candidate measured yet" : "No candidate was measured"}>
            <p>
              {running
                ? "The first candidate is the model's current config."
                : "The search ended before its first candidate was measured."}
            </p>
          </EmptyState>
        </section>
      ) : (
        <>
          <section className="card" aria-labelledby="search-chart-title">
            <h2 id="search-chart-title">Candidates</h2>
            <CandidatesScatterChart
              candidates={search.candidates}
              recommendedIndex={search.recommendedIndex}
              p99BudgetMs={budgetMs}
            />
          </section>
          <section className="card" aria-labelledby="search-table-title">
            <h2 id="search-table-title">Every candidate</h2>
            <CandidatesTable
              candidates={search.candidates}
              recommendedIndex={search.recommendedIndex}
              appliedIndex={search.appliedIndex}
              currency={currency}
              model={search.model}
              onApply={doApply}
            />
          </section>
        </>
      )}
    </>
  );
}
