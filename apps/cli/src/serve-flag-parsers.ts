import { InvalidArgumentError } from "commander";
import proxyaddr from "proxy-addr";
import type { CacheConfig } from "./serve-flags.js";

/** Commander value parsers of `operon serve`'s flags: each checks one value and names what is wrong with it. */

/** Repeatable options. No default array: a default would make commander treat a required option as given. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * One `--cache-config` value: `<cache>,<key>=<value>[,<key>=<value>...]`,
 * as tritonserver takes it (e.g. `local,size=1048576`); repeating the flag
 * adds settings. Only the `local` (in-process) cache exists; its one
 * setting is `size` in bytes.
 */
export function parseCacheConfig(value: string, previous: CacheConfig | undefined): CacheConfig {
  const [cache = "", ...pairs] = value.split(",").map((part) => part.trim());
  if (cache === "redis") throw new InvalidArgumentError("the 'redis' cache is not supported; use 'local,size=<bytes>'");
  if (cache !== "local") throw new InvalidArgumentError(`unknown cache '${cache}'; use 'local,size=<bytes>'`);
  if (pairs.length === 0) throw new InvalidArgumentError("expected '<cache>,<key>=<value>', e.g. 'local,size=1048576'");
  const config: CacheConfig = previous ?? { cache, settings: {} };
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    const key = equals < 0 ? pair : pair.slice(0, equals);
    const setting = equals < 0 ? "" : pair.slice(equals + 1);
    if (equals <= 0 || setting === "") throw new InvalidArgumentError(`'${pair}' is not a <key>=<value> setting`);
    if (key !== "size")
      throw new InvalidArgumentError(`unknown setting '${key}' of the local cache; it takes size=<bytes>`);
    const size = Number(setting);
    if (!/^[0-9]+$/.test(setting) || !Number.isSafeInteger(size) || size <= 0) {
      throw new InvalidArgumentError(`size '${setting}' is not a positive number of bytes`);
    }
    config.settings.size = size;
  }
  return config;
}

/**
 * `--trusted-proxy`: IP addresses, CIDR ranges (10.0.0.0/8, fd00::/8) or
 * proxy-addr's names (loopback, linklocal, uniquelocal), repeatable and
 * comma-separated (one environment variable can list several). Each entry is
 * checked by proxy-addr, the library the console then matches peers with.
 */
export function parseTrustedProxy(value: string, previous: string[]): string[] {
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) throw new InvalidArgumentError("expected an IP address or CIDR range, e.g. 10.0.0.0/8");
  for (const entry of entries) {
    try {
      proxyaddr.compile(entry);
    } catch (error) {
      throw new InvalidArgumentError(
        `'${entry}' is not an IP address or CIDR range (${(error as Error).message}); e.g. 10.0.0.1 or 10.0.0.0/8, repeat the flag or separate with commas for several`,
      );
    }
  }
  return [...previous, ...entries];
}

export function parseBool(value: string | undefined): boolean {
  if (value === undefined) return true;
  const lowered = value.toLowerCase();
  if (["true", "1", "yes", "on"].includes(lowered)) return true;
  if (["false", "0", "no", "off"].includes(lowered)) return false;
  throw new InvalidArgumentError(`'${value}' is not a boolean; use true or false`);
}

// Number("") and Number(" ") are 0: an empty value (an environment variable set to "") must not read as 0.
export function parseNonNegativeInt(value: string): number {
  const parsed = value.trim() === "" ? Number.NaN : Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0)
    throw new InvalidArgumentError(`'${value}' is not a non-negative integer`);
  return parsed;
}

export function parsePositiveInt(value: string): number {
  const parsed = parseNonNegativeInt(value);
  if (parsed === 0) throw new InvalidArgumentError(`'${value}' must be greater than 0`);
  return parsed;
}

export function parsePositiveNumber(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new InvalidArgumentError(`'${value}' is not a positive number`);
  return parsed;
}

export function parseFraction(value: string): number {
  const parsed = value.trim() === "" ? Number.NaN : Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > 10)
    throw new InvalidArgumentError(`'${value}' is not a fraction from 0 to 10 (0.25 = 25 %)`);
  return parsed;
}

export function parsePort(value: string): number {
  const parsed = parseNonNegativeInt(value);
  if (parsed > 65535) throw new InvalidArgumentError(`'${value}' is not a port (0-65535; 0 picks a free port)`);
  return parsed;
}
