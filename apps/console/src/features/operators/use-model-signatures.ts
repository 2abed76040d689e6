"use client";

import { useQueries } from "@tanstack/react-query";
import { useCallback, useMemo } from "react";
import { useTRPC } from "@/lib/trpc";
import type { ModelSignature } from "./graph-ports";

/**
 * The tensors (name, datatype, full shape) of every model the spec's model
 * steps call, from models.get through the query cache, for the graph's
 * ports. A model the console cannot describe (not served, a typo) is simply
 * absent: its step's ports fall back to the names the spec maps.
 */
export function useModelSignatures(spec: Record<string, unknown>): ReadonlyMap<string, ModelSignature> {
  const trpc = useTRPC();
  const models = useMemo(() => modelNames(spec), [spec]);
  // combine runs again only when an answer (or the list of models) changes, so the map stays the same object in between.
  const combine = useCallback(
    (results: ReadonlyArray<{ data?: ModelSignature | undefined }>): ReadonlyMap<string, ModelSignature> => {
      const signatures = new Map<string, ModelSignature>();
      results.forEach((result, index) => {
        if (result.data !== undefined)
          signatures.set(models[index]!, { inputs: result.data.inputs, outputs: result.data.outputs });
      });
      return signatures;
    },
    [models],
  );
  return useQueries({
    queries: models.map((name) => ({ ...trpc.models.get.queryOptions({ name }), staleTime: 10_000, retry: false })),
    combine,
  });
}

/** The distinct models the spec's model steps name, in order. */
function modelNames(spec: Record<string, unknown>): string[] {
  const steps = Array.isArray(spec["steps"]) ? spec["steps"] : [];
  const names = steps.flatMap((step: unknown) => {
    if (typeof step !== "object" || step === null) return [];
    const { kind, model } = step as Record<string, unknown>;
    return kind === "model" && typeof model === "string" && model !== "" ? [model] : [];
  });
  return [...new Set(names)];
}
