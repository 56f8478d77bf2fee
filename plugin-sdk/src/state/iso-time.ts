/** How many distinct milliseconds are remembered: a write's own time, a lease's expiry and a retry time or two. */
const REMEMBERED = 4;
const times: number[] = new Array<number>(REMEMBERED).fill(Number.NaN);
const texts: string[] = new Array<string>(REMEMBERED).fill("");
let oldest = 0;

/**
 * `new Date(ms).toISOString()`, formatted once per millisecond: the text of the last
 * few milliseconds asked for is kept and handed out again. State records carry
 * several timestamps per write, and at a few thousand runs a second most of them
 * fall in a millisecond already formatted. Stores keep these texts, so every record
 * of one millisecond shares one string, and it is a flat one: a text joined from a
 * cached prefix and the milliseconds would be a tree of four strings, all kept.
 */
export function isoTimestamp(ms: number = Date.now()): string {
  for (let slot = 0; slot < REMEMBERED; slot += 1) if (times[slot] === ms) return texts[slot]!;
  // Throws a RangeError for a time that is not one, as Date does; nothing is remembered then.
  const text = new Date(ms).toISOString();
  times[oldest] = ms;
  texts[oldest] = text;
  oldest = (oldest + 1) % REMEMBERED;
  return text;
}
