"use client";

import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { EXAMPLE_SPEC_TEXT } from "./example-spec";
import { OperatorEditor } from "./operator-editor";

export function NewOperatorPage() {
  return (
    <>
      <PageHeader title="New operator">
        <p>
          An operator chains model calls (and routes and early exits) into one servable DAG. The example calls{" "}
          <code>add_sub</code> twice; change it to your models.
        </p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <section className="card">
          <OperatorEditor mode="create" initial={{ name: "", description: "", specText: EXAMPLE_SPEC_TEXT }} />
        </section>
      </RequireRole>
    </>
  );
}
