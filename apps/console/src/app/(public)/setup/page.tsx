import type { Metadata } from "next";
import { Suspense } from "react";
import { SetupForm } from "@/features/auth/setup-form";
import { LoadingState } from "@/components/states/loading-state";

export const metadata: Metadata = { title: "Set up" };

export default function SetupPage() {
  return (
    <Suspense fallback={<LoadingState />}>
      <SetupForm />
    </Suspense>
  );
}
