import type { Metadata } from "next";
import { PerfReportPage } from "@/features/perf/perf-report-page";

type Props = { params: Promise<{ id: string }> };

export const metadata: Metadata = { title: "Perf report" };

export default async function Page({ params }: Props) {
  return <PerfReportPage id={(await params).id} />;
}
