"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import type { FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { EmptyState } from "@/components/states/empty-state";
import { ErrorState } from "@/components/states/error-state";
import { LoadingState } from "@/components/states/loading-state";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldChecks, required } from "@/components/form/field-checks";
import { newPasswordChecks } from "@/components/form/password-checks";

const FIELDS = ["token", "email", "name", "password", "confirmPassword"];

/** First run: creates the first admin with the token `operon serve` printed (?token=), then signs them in. */
export function SetupForm() {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const tokenFromLink = useSearchParams().get("token") ?? "";
  const session = useQuery({ ...trpc.auth.session.queryOptions(), staleTime: 0 });
  const { problem, clear, fromError, atFields } = useFormProblem();
  const completeSetup = useMutation(
    trpc.auth.completeSetup.mutationOptions({
      onSuccess: ({ user }) => {
        queryClient.setQueryData(trpc.auth.session.queryKey(), { user, needsSetup: false });
        router.replace("/");
      },
      onError: fromError,
    }),
  );

  if (session.isPending) return <LoadingState />;
  if (session.isError) return <ErrorState error={session.error} onRetry={() => void session.refetch()} />;
  if (!session.data.needsSetup && !completeSetup.isSuccess) {
    return (
      <EmptyState title="Setup is complete">
        <p>An admin account exists already.</p>
        <p>
          <Link href={session.data.user ? "/" : "/sign-in"}>{session.data.user ? "Go to the console" : "Sign in"}</Link>
        </p>
      </EmptyState>
    );
  }

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const form = new FormData(event.currentTarget);
    const password = String(form.get("password") ?? "");
    const token = String(form.get("token") ?? "").trim();
    const email = String(form.get("email") ?? "");
    const found = fieldChecks([
      ["token", required(token)],
      ["email", required(email)],
      ...newPasswordChecks(
        { password, confirmPassword: String(form.get("confirmPassword") ?? "") },
        { password: "password", confirmPassword: "confirmPassword" },
        "the two passwords differ",
      ),
    ]);
    if (found.length > 0) {
      atFields(found);
      return;
    }
    const name = String(form.get("name") ?? "").trim();
    completeSetup.mutate({
      token,
      email,
      ...(name ? { name } : {}),
      password,
    });
  };

  return (
    <>
      <h1>Set up Operon</h1>
      <p>Create the first admin account. You can add more people once you are in.</p>
      <form onSubmit={submit} noValidate className="form">
        <TextField
          label="Setup token"
          name="token"
          defaultValue={tokenFromLink}
          required
          autoComplete="off"
          spellCheck={false}
          hint={
            <>
              From the link <code>operon serve</code> printed in its terminal.
            </>
          }
          error={fieldMessage(problem, "token")}
        />
        <TextField
          label="Email"
          name="email"
          type="email"
          autoComplete="username"
          required
          error={fieldMessage(problem, "email")}
        />
        <TextField label="Name (optional)" name="name" autoComplete="name" error={fieldMessage(problem, "name")} />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          hint="At least 10 characters."
          error={fieldMessage(problem, "password")}
        />
        <TextField
          label="Password again"
          name="confirmPassword"
          type="password"
          autoComplete="new-password"
          required
          error={fieldMessage(problem, "confirmPassword")}
        />
        <FormAlert message={formMessage(problem, FIELDS)} />
        <button type="submit" className="button button-primary" disabled={completeSetup.isPending}>
          {completeSetup.isPending ? "Creating the admin…" : "Create admin and sign in"}
        </button>
      </form>
    </>
  );
}
