import { HttpError } from "./http.js";

/** `?wait=<seconds>` is capped so a request cannot pin a connection indefinitely. */
export const MAX_WAIT_SECONDS = 120;

/** Decimal seconds only: Number() would also take hex, binary, octal, exponents and blanks (0x10, 0b11, 1e1, "  "). */
const DECIMAL_SECONDS = /^\d+(?:\.\d+)?$/;

/** `?wait=<seconds>`: 0 when absent or empty, at most MAX_WAIT_SECONDS; anything but a decimal number of seconds is a 400. */
export function parseWait(value: string | null): number {
  if (value === null || value === "") return 0;
  if (!DECIMAL_SECONDS.test(value)) {
    // Quoted as JSON and cut short: the value is the caller's, whatever it holds.
    const shown = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `query parameter wait=${shown} is not a decimal number of seconds`, {
      fix: `Use e.g. ?wait=30 or ?wait=2.5 (seconds, at most ${MAX_WAIT_SECONDS}), or leave wait out.`,
    });
  }
  return Math.min(Number(value), MAX_WAIT_SECONDS);
}
