/**
 * Diagnostic text (an error's message) made storable by every state store:
 * a lone surrogate or NUL becomes U+FFFD. PostgreSQL refuses both in text, so
 * an error message holding one would fail the write that records the error.
 * Not for user content, which a store keeps exactly or refuses.
 */
export function storableText(text: string): string {
  // toWellFormed replaces each lone surrogate (half of a pair, e.g. a string cut inside an emoji) with U+FFFD.
  return text.toWellFormed().replaceAll("\u0000", "\uFFFD");
}

/**
 * How many of `bytes` to keep so that output cut at a byte cap ends on a whole
 * UTF-8 character: the length less a multi-byte character the cap cut in half,
 * which would otherwise decode as U+FFFD. Output that ends whole keeps its length.
 */
export function utf8Boundary(bytes: Uint8Array): number {
  let start = bytes.length;
  // Step back over at most 3 continuation bytes (10xxxxxx) to the last lead byte.
  while (start > 0 && bytes.length - start < 4 && ((bytes[start - 1] ?? 0) & 0xc0) === 0x80) start -= 1;
  if (start === 0) return bytes.length;
  const lead = bytes[start - 1] ?? 0;
  const width = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return bytes.length - (start - 1) >= width ? bytes.length : start - 1;
}

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators: no logical path may hold one, and each breaks a printed line. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER.source, "g");

/** Whether `text` holds a control character (CONTROL_CHARACTER: a newline, a tab, DEL, U+2028, ...). */
export function holdsControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/** `text` with each control character written as `\uXXXX`, so a name holding one cannot break the line it is printed on. */
export function escapedControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
