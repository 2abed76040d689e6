import type { Metadata } from "next";
import { NewOperatorPage } from "@/features/operators/new-operator-page";

export const metadata: Metadata = { title: "New operator" };

export default function Page() {
  return <NewOperatorPage />;
}
