/**
 * The first `max` UTF-16 units of `text`, one fewer when the cut would split a
 * surrogate pair: half a character is no text (PostgreSQL refuses it, a
 * provider's JSON decoder may too).
 */
export function headOf(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
