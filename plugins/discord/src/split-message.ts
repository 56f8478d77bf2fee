/** Discord opens a code block at a ``` and closes it at the next one. */
const FENCE = "```";

/** What a part cut inside a code block ends with; its length is kept free when choosing the cut. */
const CLOSING_FENCE = `\n${FENCE}`;

/**
 * Split a reply into chunks of at most `limit` UTF-16 code units (never more
 * characters than Discord counts), cutting at the last line break, else the last
 * space, in the second half of a chunk, else exactly at the limit (never inside a
 * surrogate pair or a fence). A cut inside a ``` code block ends that chunk with a
 * closing fence and starts the next with the block's opening fence line (its
 * language tag kept), so the code shows as code in both. Joining the chunks gives
 * back the text, but for those added fences; an empty text gives [].
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`splitMessage: limit ${limit} must be an integer of at least 2`);
  const chunks: string[] = [];
  let rest = text;
  // The code block `rest` starts inside: only after a cut with no room to close and reopen it.
  let openAtStart: OpenFence | undefined;
  while (rest.length > limit) {
    let cut = cutAt(rest, limit);
    let open = openFenceAt(rest, cut, openAtStart);
    if (open !== undefined && hasRoomToReopen(open.line, limit)) {
      cut = cutAt(rest, limit - CLOSING_FENCE.length);
      open = openFenceAt(rest, cut, openAtStart);
      // Nothing of the block would be in this chunk: it ends before the block instead.
      if (open !== undefined && open.at > 0 && rest.slice(open.at + open.line.length, cut).trim() === "") {
        cut = open.at;
        open = undefined;
      }
      if (open !== undefined) {
        const chunk = rest.slice(0, cut);
        chunks.push(chunk + (chunk.endsWith("\n") ? FENCE : CLOSING_FENCE));
        const after = rest.slice(cut);
        // The block's own closing fence comes next: the one just added stands for it, and nothing is reopened.
        const closing = /^\s*```/.exec(after);
        rest = closing ? after.slice(closing[0].length) : `${open.line}\n${after}`;
        openAtStart = undefined;
        continue;
      }
    }
    chunks.push(rest.slice(0, cut));
    rest = rest.slice(cut);
    openAtStart = open && { line: open.line, at: -1 };
  }
  if (rest.length > 0) chunks.push(rest);
  return chunks;
}

/** Where to end the next chunk of `text`: after a line break or a space in the second half of `limit`, else at it. */
function cutAt(text: string, limit: number): number {
  const window = text.slice(0, limit);
  let cut = Math.max(window.lastIndexOf("\n"), window.lastIndexOf(" "));
  if (window.lastIndexOf("\n") >= limit / 2) cut = window.lastIndexOf("\n");
  if (cut >= limit / 2) return cut + 1; // the separator stays at the end of this chunk
  cut = limit;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  // Not between the backticks of a fence, which would then open or close nothing.
  for (const back of [1, 2]) if (text.startsWith(FENCE, cut - back) && cut - back >= limit / 2) return cut - back;
  return cut;
}

/** A code block open at some point of a text. */
interface OpenFence {
  /** Its opening fence: ``` and the language tag, if any. */
  line: string;
  /** Where that fence is in the text; -1 in an earlier part. */
  at: number;
}

/** The code block open at `end` in `text`, given the one open where `text` starts; undefined outside any block. */
function openFenceAt(text: string, end: number, openAtStart: OpenFence | undefined): OpenFence | undefined {
  let open = openAtStart;
  for (let at = text.indexOf(FENCE); at !== -1 && at + FENCE.length <= end; at = text.indexOf(FENCE, at + FENCE.length)) {
    if (open !== undefined) {
      open = undefined;
      continue;
    }
    const lineEnd = text.indexOf("\n", at);
    const info = text.slice(at + FENCE.length, lineEnd === -1 ? text.length : lineEnd);
    // Discord reads a language tag only when it fills the rest of the fence's line.
    open = { line: /^[a-z0-9_+\-.#]+$/i.test(info) ? FENCE + info : FENCE, at };
  }
  return open;
}

/** Whether closing and reopening a block still leaves at least half a chunk for the text (else a chunk could hold nothing new). */
function hasRoomToReopen(fence: string, limit: number): boolean {
  return fence.length + 1 + CLOSING_FENCE.length <= limit / 2;
}
