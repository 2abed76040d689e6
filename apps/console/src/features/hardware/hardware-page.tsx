"use client";

import { PageHeader } from "@/components/page-header";
import { CostsSection } from "./costs-section";
import { ProfilesSection } from "./profiles-section";

export function HardwarePage() {
  return (
    <>
      <PageHeader title="Hardware & cost">
        <p>The hosts Operon runs on, what they cost, and what each model costs to serve.</p>
      </PageHeader>
      <ProfilesSection />
      <CostsSection />
    </>
  );
}
