/**
 * "YYYY-MM-DDTHH:MM:SS." of the two seconds last formatted: a write's own time
 * and a lease's expiry a few seconds on alternate.
 */
const seconds = [Number.NaN, Number.NaN];
const prefixes = ["", ""];
let older = 0;

/**
 * `new Date(ms).toISOString()`, without formatting a Date for every call: the
 * text up to the milliseconds is kept for the second it belongs to. State records
 * carry several timestamps per write, and formatting a Date costs about a
 * microsecond, more than the rest of a small in-memory write.
 */
export function isoTimestamp(ms: number = Date.now()): string {
  // A fraction of a millisecond is cut toward zero by Date: left to it.
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  const slot = seconds[0] === second ? 0 : seconds[1] === second ? 1 : -1;
  if (slot < 0) {
    const full = new Date(ms).toISOString();
    // Years outside 0000-9999 are written with a sign and six digits: not kept.
    if (full.length !== 24) return full;
    seconds[older] = second;
    prefixes[older] = full.slice(0, 20);
    older = 1 - older;
    return full;
  }
  const millis = ms - second * 1000;
  return `${prefixes[slot]}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
}
