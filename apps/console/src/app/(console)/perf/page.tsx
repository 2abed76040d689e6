import type { Metadata } from "next";
import { PerfPage } from "@/features/perf/perf-page";

export const metadata: Metadata = { title: "Perf reports" };

export default function Page() {
  return <PerfPage />;
}
