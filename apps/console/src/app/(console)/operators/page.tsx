import type { Metadata } from "next";
import { OperatorsPage } from "@/features/operators/operators-page";

export const metadata: Metadata = { title: "Operators" };

export default function Page() {
  return <OperatorsPage />;
}
