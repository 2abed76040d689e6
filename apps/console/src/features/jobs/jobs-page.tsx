"use client";

import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { DatasetsSection } from "./datasets-section";
import { JobsSection } from "./jobs-section";

export function JobsPage() {
  return (
    <>
      <PageHeader title="Jobs">
        <p>
          Batch jobs: a model or operator over a dataset, in the capacity online traffic leaves idle. Engineers see and
          manage their own jobs and datasets; admins all of them.
        </p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <JobsSection />
        <DatasetsSection />
      </RequireRole>
    </>
  );
}
