import { AssemblyLineError } from "../errors.js";

/** Refuse a listing's `limit` that is not a whole number of entries, 0 or more; `caller` names the listing. */
export function checkListLimit(limit: number, caller: string): void {
  if (Number.isSafeInteger(limit) && limit >= 0) return;
  throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${caller} got limit ${String(limit)}, which is not a whole number of entries`, {
    fix: "Give limit as a whole number, 0 or more: how many of the first entries to list.",
  });
}
