import { fieldChecks, required } from "../../components/form/field-checks";
import type { RouterInputs } from "@/lib/api-types";

export type CreateApiKeyInput = RouterInputs["apiKeys"]["create"];

/** Either the input for apiKeys.create or the fields the browser found wrong before asking the API. */
export type ParsedApiKeyForm =
  | { ok: true; input: CreateApiKeyInput }
  | { ok: false; fieldErrors: Array<{ path: string; message: string }> };

/**
 * Reads the create-key form. The expiry is a date: the key works until the
 * end of that day in the reader's time zone. Empty optional numbers are left
 * out, so the API's defaults apply (priority 0 = the model's default, no quota).
 */
export function parseApiKeyForm(form: FormData): ParsedApiKeyForm {
  const fieldErrors: Array<{ path: string; message: string }> = [];
  const name = String(form.get("name") ?? "").trim();
  const scopes = form.getAll("scopes").map(String) as CreateApiKeyInput["scopes"];
  const expiresOn = String(form.get("expiresOn") ?? "").trim();
  const priority = optionalInteger(form.get("priorityLevel"), "priorityLevel", 0, fieldErrors);
  const quota = optionalInteger(form.get("qpsQuota"), "qpsQuota", 1, fieldErrors);
  let expiresAt: string | undefined;
  if (expiresOn !== "") {
    const end = new Date(`${expiresOn}T23:59:59.999`);
    if (Number.isNaN(end.getTime())) fieldErrors.push({ path: "expiresAt", message: "not a date" });
    else expiresAt = end.toISOString();
  }
  // The API's rules for the name and scopes (api-keys-router.ts): checked here too, so a bad name shows with a bad
  // number on the first submit rather than after it.
  fieldErrors.unshift(
    ...fieldChecks([
      ["name", required(name)],
      ["scopes", scopes.length === 0 && "pick at least one scope"],
    ]),
  );
  if (fieldErrors.length > 0) return { ok: false, fieldErrors };
  return {
    ok: true,
    input: {
      name,
      scopes,
      ...(expiresAt !== undefined ? { expiresAt } : {}),
      ...(priority !== undefined ? { priorityLevel: priority } : {}),
      ...(quota !== undefined ? { qpsQuota: quota } : {}),
    },
  };
}

function optionalInteger(
  raw: FormDataEntryValue | null,
  path: string,
  min: number,
  errors: Array<{ path: string; message: string }>,
): number | undefined {
  const text = String(raw ?? "").trim();
  if (text === "") return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    errors.push({ path, message: min === 0 ? "a whole number, 0 or more" : `a whole number, ${min} or more` });
    return undefined;
  }
  return value;
}
