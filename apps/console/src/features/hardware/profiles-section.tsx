"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { ProfileForm } from "./profile-form";
import { ProfilesTable } from "./profiles-table";

/** The rules the API enforces, said before anyone runs into them. */
function ProfileRules() {
  return (
    <ul className="rules">
      <li>
        Exactly one profile is the default: the host the gateway runs on. Usage is costed with it from the moment it
        becomes the default.
      </li>
      <li>The first profile created becomes the default; “Make default” moves it.</li>
      <li>The default cannot be deleted while other profiles exist.</li>
      <li>A GPU profile has at least one GPU; a CPU profile has none. Costs are kept to 4 decimals.</li>
    </ul>
  );
}

export function ProfilesSection() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const isAdmin = hasRole(user.role, "ADMIN");
  const profiles = useQuery(trpc.hardware.list.queryOptions());
  /** "new", a profile id, or null. */
  const [editing, setEditing] = useState<string | null>(null);
  const edited = editing && editing !== "new" ? profiles.data?.find((profile) => profile.id === editing) : undefined;
  return (
    <section className="card" aria-labelledby="profiles-title">
      <div className="section-header">
        <h2 id="profiles-title">Hardware profiles</h2>
        {isAdmin && editing === null ? (
          <button type="button" className="button button-primary" onClick={() => setEditing("new")}>
            Add profile
          </button>
        ) : null}
      </div>
      <p className="muted">
        What the hosts are and what they cost per hour. {isAdmin ? "" : "Only admins change them."}
      </p>
      <ProfileRules />
      {isAdmin && editing !== null && (editing === "new" || edited) ? (
        <div className="subcard">
          <ProfileForm key={editing} {...(edited ? { profile: edited } : {})} onDone={() => setEditing(null)} />
        </div>
      ) : null}
      <QueryView
        query={profiles}
        loadingLabel="Loading profiles…"
        isEmpty={(list) => list.length === 0}
        empty={{
          title: "No hardware profiles yet",
          body: (
            <p>
              {isAdmin
                ? "Add the host the gateway runs on to see what models cost."
                : "An admin adds them; costs need one."}
            </p>
          ),
        }}
      >
        {(list) => <ProfilesTable profiles={list} canEdit={isAdmin} onEdit={setEditing} />}
      </QueryView>
    </section>
  );
}
