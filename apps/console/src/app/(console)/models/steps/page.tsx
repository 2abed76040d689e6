import type { Metadata } from "next";
import { StepModelPage } from "@/features/models/steps/step-model-page";

export const metadata: Metadata = { title: "Build a model from steps" };

export default function Page() {
  return <StepModelPage />;
}
