"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useMemo } from "react";
import { useTRPC } from "@/lib/trpc";
import type { ServedCatalog } from "./spec-completion";

/**
 * The models the console lists (models.list, models.get), for the spec
 * editor's completion: asked through the query cache when a completion needs
 * them, so an editor nobody completes in asks nothing. Ready models first.
 */
export function useServedCatalog(): ServedCatalog {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useMemo<ServedCatalog>(
    () => ({
      async modelNames() {
        const { models } = await queryClient.fetchQuery({ ...trpc.models.list.queryOptions(), staleTime: 10_000 });
        return [...models]
          .sort((a, b) => Number(b.state === "READY") - Number(a.state === "READY"))
          .map((model) => ({
            name: model.name,
            detail: model.state === "READY" ? "served" : model.state.toLowerCase(),
          }));
      },
      async modelTensors(model) {
        const detail = await queryClient.fetchQuery({
          ...trpc.models.get.queryOptions({ name: model }),
          staleTime: 10_000,
        });
        return {
          inputs: detail.inputs.map((tensor) => tensor.name),
          outputs: detail.outputs.map((tensor) => tensor.name),
        };
      },
    }),
    [trpc, queryClient],
  );
}
