import type { Metadata } from "next";
import { ModelDetailPage } from "@/features/models/detail/model-detail-page";

type Params = Promise<{ name: string }>;

/** Model names may hold characters that travel percent-encoded in the path. */
function modelName(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export async function generateMetadata({ params }: { params: Params }): Promise<Metadata> {
  return { title: modelName((await params).name) };
}

export default async function Page({ params }: { params: Params }) {
  return <ModelDetailPage name={modelName((await params).name)} />;
}
