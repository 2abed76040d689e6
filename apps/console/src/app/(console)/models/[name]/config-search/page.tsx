import type { Metadata } from "next";
import { ConfigSearchPage } from "@/features/config-search/config-search-page";

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
  return { title: `Config search: ${modelName((await params).name)}` };
}

export default async function Page({ params }: { params: Params }) {
  return <ConfigSearchPage model={modelName((await params).name)} />;
}
