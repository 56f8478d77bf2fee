import { HttpError } from "./http.js";

/** `?wait=<seconds>` is capped so a request cannot pin a connection indefinitely. */
export const MAX_WAIT_SECONDS = 120;

/** `?wait=<seconds>`: 0 when absent or empty, at most MAX_WAIT_SECONDS; anything but a number of seconds is a 400. */
export function parseWait(value: string | null): number {
  if (value === null || value === "") return 0;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `?wait=${value} is not a number of seconds`, { fix: `Use ?wait=30 (at most ${MAX_WAIT_SECONDS}).` });
  }
  return Math.min(seconds, MAX_WAIT_SECONDS);
}
