import type { UseQueryResult } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { EmptyState } from "./empty-state";
import { ErrorState } from "./error-state";
import { LoadingState } from "./loading-state";

/**
 * Shows one query's loading, error, empty or loaded state, so every page
 * handles all four the same way.
 */
export function QueryView<T, E>({
  query,
  isEmpty,
  empty,
  loadingLabel,
  children,
}: {
  query: UseQueryResult<T, E>;
  isEmpty?: (data: T) => boolean;
  empty?: { title: string; body?: ReactNode };
  loadingLabel?: string;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <LoadingState {...(loadingLabel ? { label: loadingLabel } : {})} />;
  if (query.isError) return <ErrorState error={query.error} onRetry={() => void query.refetch()} />;
  if (isEmpty?.(query.data) && empty) return <EmptyState title={empty.title}>{empty.body}</EmptyState>;
  return <>{children(query.data)}</>;
}
