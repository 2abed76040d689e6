import { InvalidArgumentError } from "commander";

/** --backend-config gathered over its uses: settings per backend name (TRITONBACKEND_BackendConfig's "cmdline"). */
export type BackendConfigFlags = Record<string, Record<string, string>>;

/**
 * One `--backend-config` value, tritonserver's syntax: `<backend>,<key>=<value>`
 * (e.g. `operon_identity,greeting=hi`); repeating the flag adds settings, a
 * later value of the same key wins. The value may itself hold '=' or ','.
 */
export function parseBackendConfig(value: string, previous: BackendConfigFlags | undefined): BackendConfigFlags {
  const comma = value.indexOf(",");
  const backend = comma < 0 ? "" : value.slice(0, comma).trim();
  const setting = comma < 0 ? value : value.slice(comma + 1);
  if (comma < 0 || backend === "" || backend.includes("=")) {
    throw new InvalidArgumentError(
      `'${value}' is not '<backend>,<key>=<value>' (e.g. 'operon_identity,greeting=hi'); settings for every backend have their own flags (e.g. --default-max-batch-size)`,
    );
  }
  const equals = setting.indexOf("=");
  const key = equals < 0 ? "" : setting.slice(0, equals).trim();
  if (key === "")
    throw new InvalidArgumentError(`'${setting}' in --backend-config '${value}' is not a <key>=<value> setting`);
  const config: BackendConfigFlags = { ...(previous ?? {}) };
  config[backend] = { ...(config[backend] ?? {}), [key]: setting.slice(equals + 1) };
  return config;
}
