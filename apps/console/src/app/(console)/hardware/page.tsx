import type { Metadata } from "next";
import { HardwarePage } from "@/features/hardware/hardware-page";

export const metadata: Metadata = { title: "Hardware & cost" };

export default function Page() {
  return <HardwarePage />;
}
