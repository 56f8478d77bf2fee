import { constants } from "node:buffer";

/**
 * How long the lines of a state folder may be. A log record and a snapshot row are each one line,
 * read back as one string, and Node.js makes no string longer than `constants.MAX_STRING_LENGTH`
 * (536,870,888 UTF-16 units on 64-bit builds), nor decodes more UTF-8 into one: a longer line could
 * be written, but never read back, and the folder would no longer open.
 *
 * A property of one object, not constants, so a test can lower them (and restore them) to show
 * with small data what the real sizes do.
 */
export const lineLimits = {
  /**
   * The most UTF-8 bytes of JSON one call's log record may hold; a larger write is refused before
   * anything is written. Well under the longest line that reads back: a snapshot row may join a few
   * records (a run's input, output and error), and those rows must read back too.
   */
  recordBytes: 128 * 1024 * 1024,
  /**
   * What a snapshot row holds of a run's events, tool calls and steps, or of a conversation's messages,
   * in characters, before the rest goes into rows of their own (each one no longer than this either,
   * unless one item alone is).
   */
  snapshotRowChars: 1024 * 1024,
  /** The most UTF-8 bytes of JSON a snapshot line may hold: a fold that would write a longer one is abandoned, its logs kept. */
  snapshotLineBytes: constants.MAX_STRING_LENGTH,
};
