import type { RouterInputs, RouterOutputs } from "@/lib/api-types";

export type HardwareProfile = RouterOutputs["hardware"]["list"][number];
export type CreateProfileInput = RouterInputs["hardware"]["create"];
