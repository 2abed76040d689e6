import type { Metadata } from "next";
import { OperatorDetailPage } from "@/features/operators/operator-detail-page";

type Props = { params: Promise<{ name: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  return { title: decodeURIComponent((await params).name) };
}

export default async function Page({ params }: Props) {
  return <OperatorDetailPage name={decodeURIComponent((await params).name)} />;
}
