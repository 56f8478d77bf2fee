/**
 * Split a reply into chunks of at most `limit` UTF-16 code units (never more
 * characters than Discord counts), cutting at the last line break, else the last
 * space, in the second half of a chunk, else exactly at the limit (never inside a
 * surrogate pair). Joining the chunks gives back the text; an empty text gives [].
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`splitMessage: limit ${limit} must be an integer of at least 2`);
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    let cut = Math.max(window.lastIndexOf("\n"), window.lastIndexOf(" "));
    if (window.lastIndexOf("\n") >= limit / 2) cut = window.lastIndexOf("\n");
    if (cut < limit / 2) cut = limit;
    else cut += 1; // keep the separator at the end of this chunk, so joining restores the text
    const code = rest.charCodeAt(cut - 1);
    if (cut === limit && code >= 0xd800 && code <= 0xdbff) cut -= 1;
    chunks.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0) chunks.push(rest);
  return chunks;
}
