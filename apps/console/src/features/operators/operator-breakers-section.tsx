"use client";

import { useQuery } from "@tanstack/react-query";
import { FactList } from "@/components/fact-list";
import { useTRPC } from "@/lib/trpc";
import type { OperatorDetail } from "./operator-labels";

type BreakerState = OperatorDetail["breakers"][number]["state"];

const LABELS: Record<BreakerState, string> = { closed: "Closed", open: "Open", "half-open": "Half-open" };

/**
 * The circuit breaker of each step that has one (issue 25), as the gateway's served version holds it now. The
 * breaker moves in seconds (openMs), so the operator is read again every 3 s; nothing shows for an operator
 * without breakers.
 */
export function OperatorBreakersSection({ name }: { name: string }) {
  const trpc = useTRPC();
  const operator = useQuery({ ...trpc.operators.get.queryOptions({ name }), refetchInterval: 3000 });
  const breakers = operator.data?.breakers ?? [];
  if (breakers.length === 0) return null;
  return (
    <section className="card" aria-labelledby="breakers-title">
      <h2 id="breakers-title">Circuit breakers</h2>
      <p className="muted">
        Closed: calls go through. Open (after repeated failures): calls are refused without reaching the model, and the
        step's fallback answers if it has one. Half-open: a probe call decides whether it closes again.
      </p>
      <FactList
        facts={breakers.map(({ step, state }) => [
          `Step ${step}`,
          <span key={step} className={`status status-breaker-${state}`}>
            {LABELS[state]}
          </span>,
        ])}
      />
    </section>
  );
}
