"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { useEffect, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { safeNextPath } from "@/lib/safe-redirect";
import { useTRPC } from "@/lib/trpc";
import { useFormProblem } from "@/components/form/use-form-problem";

const FIELDS = ["email", "password"];

export function SignInForm() {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const next = safeNextPath(useSearchParams().get("next"));
  const session = useQuery({ ...trpc.auth.session.queryOptions(), staleTime: 0 });
  const { problem, clear, fromError } = useFormProblem();
  const signIn = useMutation(
    trpc.auth.signIn.mutationOptions({
      onSuccess: ({ user }) => {
        queryClient.setQueryData(trpc.auth.session.queryKey(), { user, needsSetup: false });
        router.replace(next);
      },
      onError: fromError,
    }),
  );

  const signedIn = session.data?.user != null;
  useEffect(() => {
    if (signedIn && !signIn.isSuccess) router.replace(next);
  }, [signedIn, signIn.isSuccess, router, next]);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const form = new FormData(event.currentTarget);
    signIn.mutate({ email: String(form.get("email") ?? ""), password: String(form.get("password") ?? "") });
  };

  return (
    <>
      <h1>Sign in</h1>
      {session.data?.needsSetup ? (
        <div className="notice">
          <p>Operon has no accounts yet.</p>
          <p>
            <Link href="/setup">Set up the first admin</Link> with the link <code>operon serve</code> printed in its
            terminal.
          </p>
        </div>
      ) : null}
      <form onSubmit={submit} noValidate className="form">
        <TextField
          label="Email"
          name="email"
          type="email"
          autoComplete="username"
          required
          error={fieldMessage(problem, "email")}
        />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          error={fieldMessage(problem, "password")}
        />
        <FormAlert message={formMessage(problem, FIELDS)} />
        <button type="submit" className="button button-primary" disabled={signIn.isPending}>
          {signIn.isPending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </>
  );
}
