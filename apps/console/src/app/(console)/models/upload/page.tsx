import type { Metadata } from "next";
import { UploadModelPage } from "@/features/models/upload/upload-model-page";

export const metadata: Metadata = { title: "Upload a model" };

export default function Page() {
  return <UploadModelPage />;
}
