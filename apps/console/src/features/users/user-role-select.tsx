"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId } from "react";
import type { Role } from "@/lib/api-types";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { ROLE_OPTIONS } from "./role-options";

/** Changes a user's role as soon as another is picked; the API's refusal (the last admin) shows beside it. */
export function UserRoleSelect({ id, email, role }: { id: string; email: string; role: Role }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const selectId = useId();
  const setRole = useMutation(
    trpc.users.setRole.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() }),
    }),
  );
  const error = setRole.isError ? apiProblem(setRole.error).message : undefined;
  return (
    <div className="inline-field">
      <label htmlFor={selectId} className="visually-hidden">
        Role of {email}
      </label>
      <select
        id={selectId}
        value={setRole.isPending ? setRole.variables.role : role}
        disabled={setRole.isPending}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${selectId}-error` : undefined}
        onChange={(event) => setRole.mutate({ id, role: event.target.value as Role })}
      >
        {ROLE_OPTIONS.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      {error ? (
        <p id={`${selectId}-error`} className="field-error" role="alert">
          {error}
        </p>
      ) : null}
    </div>
  );
}
