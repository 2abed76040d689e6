import type { Metadata } from "next";
import { PerfComparePage } from "@/features/perf/perf-compare-page";

type Props = { searchParams: Promise<{ a?: string | string[]; b?: string | string[] }> };

export const metadata: Metadata = { title: "Compare perf reports" };

const single = (value: string | string[] | undefined): string | null =>
  typeof value === "string" && value !== "" ? value : null;

export default async function Page({ searchParams }: Props) {
  const { a, b } = await searchParams;
  return <PerfComparePage a={single(a)} b={single(b)} />;
}
