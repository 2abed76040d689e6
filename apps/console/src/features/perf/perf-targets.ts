"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";

export interface PerfTargetOption {
  value: string;
  label: string;
}

/**
 * What a run can measure: the models the gateway has ready and the
 * operators it serves (operators also appear among the gateway's models;
 * they are offered once, as operators).
 */
export function usePerfTargets() {
  const trpc = useTRPC();
  const models = useQuery(trpc.models.list.queryOptions());
  const operators = useQuery(trpc.operators.list.queryOptions());
  const operatorNames = new Set((operators.data ?? []).map((operator) => operator.name));
  const modelOptions: PerfTargetOption[] = (models.data?.models ?? [])
    .filter((model) => model.state === "READY" && !operatorNames.has(model.name))
    .map((model) => ({ value: `MODEL:${model.name}`, label: model.name }));
  const operatorOptions: PerfTargetOption[] = (operators.data ?? [])
    .filter((operator) => operator.state === "SERVED")
    .map((operator) => ({ value: `OPERATOR:${operator.name}`, label: operator.name }));
  return {
    models: modelOptions,
    operators: operatorOptions,
    isPending: models.isPending || operators.isPending,
    error: models.error ?? operators.error,
    refetch: () => Promise.all([models.refetch(), operators.refetch()]),
  };
}
