import type { Metadata } from "next";
import { EditOperatorPage } from "@/features/operators/edit-operator-page";

type Props = { params: Promise<{ name: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  return { title: `Edit ${decodeURIComponent((await params).name)}` };
}

export default async function Page({ params }: Props) {
  return <EditOperatorPage name={decodeURIComponent((await params).name)} />;
}
