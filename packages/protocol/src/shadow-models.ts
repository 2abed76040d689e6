/**
 * Shadow models: the config search measures each candidate config as a
 * model of its own, `<model>.search-<first 8 hex digits of the search id>`,
 * beside the live model. The name pattern is reserved: only the control
 * plane (its internal key) may load such a model or send it requests; the
 * gateway answers everyone else as if it did not exist, and refuses loads
 * and uploads of such names.
 */
export const SHADOW_MODEL_SUFFIX = /\.search-[0-9a-f]{8}$/;

export function isShadowModelName(name: string): boolean {
  return SHADOW_MODEL_SUFFIX.test(name);
}

/** Why a name of the reserved pattern is refused (loads, uploads). */
export const SHADOW_NAME_RESERVED =
  "names ending in '.search-<8 hex digits>' are reserved for the config search's shadow models; choose another name";
