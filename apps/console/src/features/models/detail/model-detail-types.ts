import type { RouterOutputs } from "@/lib/api-types";

export type ModelDetail = RouterOutputs["models"]["get"];
export type ModelVersion = ModelDetail["versions"][number];
export type TensorMetadata = ModelDetail["inputs"][number];
