import type { PendingApproval } from "@assemblyline-agents/runtime";
import { skillWriteAction } from "../skill-write-action.js";

/** How much of a change's JSON a pending approval prints: enough for its action and names, not a whole automation message. */
export const CHANGE_SHOWN_CHARS = 240;
/** How many lines of a proposed skill file's text are printed, and how long each may be. */
export const SKILL_LINES_SHOWN = 6;
const SKILL_LINE_CHARS = 120;
const INDENT = "           ";

/**
 * What a pending approval would change, as short lines under it: the change a run-time API
 * (automations, connections) would make as compact JSON, or the skill write with the first
 * lines of the text it would write. None for a tool's own gate, which shows its input.
 */
export function pendingChangeLines(pending: PendingApproval): string[] {
  const lines: string[] = [];
  if (pending.change !== undefined) lines.push(`  change:  ${cutLine(printable(JSON.stringify(pending.change)), CHANGE_SHOWN_CHARS)}`);
  const write = pending.skillWrite;
  if (write) {
    const proposed = write.proposed;
    const action = skillWriteAction(write);
    lines.push(`  skill:   ${action} ${printable(`/skills/${write.name}/${write.path}`)}`);
    const text = action === "delete" ? undefined : proposed?.files[write.path];
    if (text !== undefined) {
      const textLines = text.replace(/\n$/, "").split("\n");
      for (const line of textLines.slice(0, SKILL_LINES_SHOWN)) lines.push(`${INDENT}| ${cutLine(printable(line), SKILL_LINE_CHARS)}`);
      const more = textLines.length - SKILL_LINES_SHOWN;
      if (more > 0) lines.push(`${INDENT}… ${more} more line${more === 1 ? "" : "s"}`);
    }
    const others = Object.keys(proposed?.files ?? {}).filter((path) => path !== write.path);
    if (others.length > 0) lines.push(`${INDENT}also writes: ${others.map(printable).join(", ")}`);
    if (proposed && proposed.removed.length > 0) lines.push(`${INDENT}removes: ${proposed.removed.map(printable).join(", ")}`);
    // The approver is shown a cut text: say so, or a cut could pass for the whole write.
    if (proposed?.truncated) lines.push(`${INDENT}(the text shown for approval is cut: ${proposed.bytes} bytes in all)`);
  }
  return lines;
}

/** `text` cut to `max` characters, saying how many were left out. */
function cutLine(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never half a surrogate pair.
  const end = /[\ud800-\udbff]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}… (${text.length - end} more characters)`;
}

/** Text a run wrote, safe to print: control characters (escape sequences a terminal would act on) shown as \u escapes. */
function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
