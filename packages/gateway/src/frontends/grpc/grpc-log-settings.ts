import { OperonError } from "@operon/protocol/errors";
import type { LoggingControl } from "../log-settings-api.js";

/** LogSettingsRequest/Response.SettingValue as proto-loader decodes it (oneofs: true). */
export interface WireSettingValue {
  parameter_choice?: "bool_param" | "uint32_param" | "string_param";
  bool_param?: boolean;
  uint32_param?: number;
  string_param?: string;
}

/**
 * gRPC LogSettings: the request's settings (none = just read them) are
 * applied as POST v2/logging applies its body, and the answer holds every
 * setting, each in the SettingValue field of its type.
 */
export function logSettingsResponse(
  logging: LoggingControl,
  settings: Record<string, WireSettingValue>,
): { settings: Record<string, WireSettingValue> } {
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) {
    const choice = value.parameter_choice;
    if (choice === undefined) throw new OperonError("INVALID_ARG", `log setting '${key}' has no value`);
    changes[key] = value[choice];
  }
  const values = Object.keys(changes).length > 0 ? logging.update(changes) : logging.get();
  const out: Record<string, WireSettingValue> = {};
  for (const [key, value] of Object.entries(values)) {
    out[key] =
      typeof value === "boolean"
        ? { bool_param: value }
        : typeof value === "number"
          ? { uint32_param: value }
          : { string_param: value };
  }
  return { settings: out };
}
