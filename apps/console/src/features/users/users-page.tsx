"use client";

import { useQuery } from "@tanstack/react-query";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { useTRPC } from "@/lib/trpc";
import { CodeUploadSection } from "./code-upload-section";
import { CreateUserForm } from "./create-user-form";
import { UsersTable } from "./users-table";

export function UsersPage() {
  return (
    <>
      <PageHeader title="Users">
        <p>Who may sign in to the console, with which role, and who may upload code.</p>
      </PageHeader>
      <RequireRole role="ADMIN">
        <UsersSection />
      </RequireRole>
    </>
  );
}

function UsersSection() {
  const trpc = useTRPC();
  const me = useSignedInUser();
  const users = useQuery(trpc.users.list.queryOptions());
  return (
    <>
      <section className="card" aria-labelledby="users-title">
        <h2 id="users-title">Accounts</h2>
        <QueryView
          query={users}
          loadingLabel="Loading users…"
          isEmpty={(list) => list.length === 0}
          empty={{ title: "No users" }}
        >
          {(list) => <UsersTable users={list} currentUserId={me.id} />}
        </QueryView>
      </section>
      <section className="card">
        <CreateUserForm />
      </section>
      <CodeUploadSection />
    </>
  );
}
