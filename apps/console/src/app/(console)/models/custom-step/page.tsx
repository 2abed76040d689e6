import type { Metadata } from "next";
import { CustomStepPage } from "@/features/models/custom-step/custom-step-page";

export const metadata: Metadata = { title: "Upload a custom step" };

export default function Page() {
  return <CustomStepPage />;
}
