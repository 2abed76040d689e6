/** Reported by server metadata and `operon --version`. */
export const OPERON_VERSION = "0.1.0";
