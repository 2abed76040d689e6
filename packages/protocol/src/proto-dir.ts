import { fileURLToPath } from "node:url";

/** The folder holding the KServe v2 / Triton .proto files (grpc_service, health, model_config), from src/ and dist/ alike. */
export const PROTO_DIR: string = fileURLToPath(new URL("../proto", import.meta.url));
