/** A lone UTF-16 surrogate (half of a pair, e.g. a string cut inside an emoji), or NUL. */
const UNSTORABLE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|\u0000/g;

/**
 * Diagnostic text (an error's message) made storable by every state store:
 * a lone surrogate or NUL becomes U+FFFD. PostgreSQL refuses both in text, so
 * an error message holding one would fail the write that records the error.
 * Not for user content, which a store keeps exactly or refuses.
 */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, "\uFFFD");
}
