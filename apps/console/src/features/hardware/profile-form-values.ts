import { fieldChecks, required } from "../../components/form/field-checks";
import type { FieldProblem } from "@/lib/api-problem";
import type { CreateProfileInput, HardwareProfile } from "./profile-types";

const GIB = 1024 ** 3;

export type ParsedProfileForm = { ok: true; input: CreateProfileInput } | { ok: false; fieldErrors: FieldProblem[] };

/**
 * Reads the profile form into hardware.create's input (update takes the same
 * fields). Memory is typed in GiB and sent in bytes; empty optional fields
 * are sent as null ("not known"), an empty GPU count as 0.
 */
export function parseProfileForm(form: FormData): ParsedProfileForm {
  const fieldErrors: FieldProblem[] = [];
  const text = (key: string) => String(form.get(key) ?? "").trim();
  const number = (key: string, path: string, options: { integer: boolean; scale?: number }): number | null => {
    const raw = text(key);
    if (raw === "") return null;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || (options.integer && !Number.isInteger(value))) {
      fieldErrors.push({ path, message: options.integer ? "a whole number, 0 or more" : "a number, 0 or more" });
      return null;
    }
    return options.scale ? Math.round(value * options.scale) : value;
  };
  const kind = text("kind") === "GPU" ? "GPU" : "CPU";
  const costPerHour = number("costPerHour", "costPerHour", { integer: false });
  if (text("costPerHour") === "")
    fieldErrors.push({ path: "costPerHour", message: "required (0 for a host that costs nothing)" });
  const input: CreateProfileInput = {
    name: text("name"),
    kind,
    cpuCores: number("cpuCores", "cpuCores", { integer: true }),
    memoryBytes: number("memoryGiB", "memoryBytes", { integer: false, scale: GIB }),
    gpuModel: text("gpuModel") === "" ? null : text("gpuModel"),
    gpuCount: number("gpuCount", "gpuCount", { integer: true }) ?? 0,
    gpuMemoryBytes: number("gpuMemoryGiB", "gpuMemoryBytes", { integer: false, scale: GIB }),
    // Typed in percent, sent as a share; empty = the default (the API checks 0..1).
    gpuPriceShare: percentShare(number("gpuPricePercent", "gpuPriceShare", { integer: false })),
    costPerHour: costPerHour ?? 0,
    currency: text("currency") || "USD",
  };
  // The API's rules for the fields read as they are (hardware-router.ts), so every error shows on the first submit.
  fieldErrors.push(
    ...fieldChecks([
      ["name", required(input.name)],
      ["cpuCores", input.cpuCores === 0 && "at least 1 (leave it empty when not known)"],
      ["gpuPriceShare", (input.gpuPriceShare ?? 0) > 1 && "at most 100 %"],
    ]).filter((problem) => !fieldErrors.some((known) => known.path === problem.path)),
  );
  return fieldErrors.length > 0 ? { ok: false, fieldErrors } : { ok: true, input };
}

function percentShare(percent: number | null): number | null {
  return percent === null ? null : Math.round(percent * 100) / 10_000;
}

/** A stored size in GiB for the form (up to 2 decimals). */
export function gibOf(bytes: number | null): string {
  return bytes === null ? "" : String(Math.round((bytes / GIB) * 100) / 100);
}

/** What the API says of the host the gateway runs on (hardware.host). */
export interface HostFacts {
  hostname: string;
  cpuCores: number;
  memoryBytes: number;
}

/**
 * The form's starting values: the profile's when editing; for a new one, the host's name, cores and memory (most
 * profiles describe the host the gateway runs on), so only its price is left to type.
 */
export function formDefaults(profile: HardwareProfile | undefined, host?: HostFacts) {
  const fromHost = profile === undefined ? host : undefined;
  return {
    name: profile?.name ?? fromHost?.hostname ?? "",
    kind: profile?.kind ?? "CPU",
    cpuCores: profile?.cpuCores?.toString() ?? fromHost?.cpuCores.toString() ?? "",
    memoryGiB: gibOf(profile?.memoryBytes ?? fromHost?.memoryBytes ?? null),
    gpuModel: profile?.gpuModel ?? "",
    gpuCount: profile ? String(profile.gpuCount) : "0",
    gpuMemoryGiB: gibOf(profile?.gpuMemoryBytes ?? null),
    gpuPricePercent:
      profile?.gpuPriceShare !== null && profile?.gpuPriceShare !== undefined
        ? String(Math.round(profile.gpuPriceShare * 10_000) / 100)
        : "",
    costPerHour: profile ? String(profile.costPerHour) : "",
    currency: profile?.currency ?? "USD",
  };
}
