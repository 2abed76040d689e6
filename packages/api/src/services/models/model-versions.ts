import { AppError } from "../../app-error.js";

/**
 * Version numbers of uploaded models: 1 to 2^31−1, the database's INT (and
 * a folder name Triton reads as a version). The next version is the highest
 * taken + 1; once 2^31−1 is taken there is no next one, and an upload must
 * name a free version itself. Numbers beyond the range (a folder on disk
 * named so) are not versions and are ignored.
 */
export const MAX_MODEL_VERSION = 2_147_483_647;

export function nextModelVersion(model: string, taken: Iterable<number>): number {
  let highest = 0;
  for (const version of taken)
    if (Number.isSafeInteger(version) && version <= MAX_MODEL_VERSION && version > highest) highest = version;
  if (highest >= MAX_MODEL_VERSION) {
    throw new AppError(
      "CONFLICT",
      `model '${model}' has version ${MAX_MODEL_VERSION}, the highest a version may be (2^31−1), so there is no next one; give the upload a free version number`,
      { fieldErrors: [{ path: "version", message: "name a free version" }] },
    );
  }
  return highest + 1;
}
