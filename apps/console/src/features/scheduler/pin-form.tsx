"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";

/** Pin a model's instance count, or unpin it (admins). */
export function PinForm({
  model,
  pinned,
  current,
  maxCount,
}: {
  model: string;
  pinned: number | null;
  current: number;
  maxCount: number;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.scheduler.status.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.scheduler.decisions.queryKey() }),
    ]);
  const [count, setCount] = useState(String(pinned ?? Math.max(1, current)));
  const pin = useMutation(trpc.scheduler.pin.mutationOptions({ onSuccess: refresh }));
  const unpin = useMutation(trpc.scheduler.unpin.mutationOptions({ onSuccess: refresh }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    pin.mutate({ model, count: Number(count) });
  };
  const error = pin.error ?? unpin.error;
  return (
    <form className="inline-field" onSubmit={submit} aria-label={`Pin ${model}`}>
      <div className="model-actions">
        <label className="visually-hidden" htmlFor={`pin-${model}`}>
          Instances to pin {model} at
        </label>
        <input
          id={`pin-${model}`}
          type="number"
          min={1}
          max={maxCount}
          step={1}
          required
          value={count}
          onChange={(event) => setCount(event.target.value)}
          style={{ width: "5em" }}
        />
        <button type="submit" className="button" disabled={pin.isPending} aria-label={`Pin ${model}`}>
          Pin
        </button>
        {pinned !== null ? (
          <button
            type="button"
            className="button"
            disabled={unpin.isPending}
            aria-label={`Unpin ${model}`}
            onClick={() => unpin.mutate({ model })}
          >
            Unpin
          </button>
        ) : null}
      </div>
      {error ? (
        <p className="field-error" role="alert">
          {apiProblem(error).message}
        </p>
      ) : null}
    </form>
  );
}
