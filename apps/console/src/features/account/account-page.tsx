"use client";

import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { roleLabel } from "@/lib/roles";
import { ChangePasswordForm } from "./change-password-form";
import { FactList } from "@/components/fact-list";

/** Who you are signed in as, and your password. */
export function AccountPage() {
  const user = useSignedInUser();
  return (
    <>
      <PageHeader title="Your account">
        <p>Your sign-in details. An admin changes roles and names on the Users page.</p>
      </PageHeader>
      <section className="card" aria-labelledby="profile-title">
        <h2 id="profile-title">Profile</h2>
        <FactList
          facts={[
            ["Email", user.email],
            ["Name", user.name ?? "—"],
            ["Role", roleLabel(user.role)],
          ]}
        />
      </section>
      <section className="card">
        <ChangePasswordForm />
      </section>
    </>
  );
}
