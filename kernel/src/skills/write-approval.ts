import type { JsonValue, RunStore } from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import type { SkillWriteGate, SkillWriteProposal, SkillWriteResult } from "./skill-library.js";

/** How much of a proposed skill write's text an approval request carries (UTF-8 bytes, all files together). */
export const PROPOSED_TEXT_LIMIT_BYTES = 16 * 1024;

/** What the approver reads of a write: its files' text (cut to the limit), the files it removes, and the text's full size. */
export interface ProposedSkillText {
  [key: string]: JsonValue;
  files: Record<string, string>;
  removed: string[];
  /** UTF-8 bytes of the files' whole text. */
  bytes: number;
  /** Whether `files` holds less than that: the text past PROPOSED_TEXT_LIMIT_BYTES is left out. */
  truncated: boolean;
}

/**
 * Thrown by the write gate of `selfImprovement.writeApproval`: the tool call
 * pauses for an approval of exactly this change (skill, file, digest before and
 * after, bound by `binding`), showing the text it would write. Recognised by brand.
 */
export class SkillApprovalSuspension extends Error {
  readonly $$type = "assembly-line.skill-approval-suspension";
  constructor(readonly skillWrite: SkillWriteResult & { binding: string; proposed?: ProposedSkillText }) {
    super(`skill write to /skills/${skillWrite.name}/${skillWrite.path} waits for approval`);
    this.name = "SkillApprovalSuspension";
  }

  get reason(): string {
    const { after, before, path, proposed } = this.skillWrite;
    const removesFile = proposed !== undefined && Object.keys(proposed.files).length === 0 && proposed.removed.includes(path);
    const what = after === null || removesFile ? "delete" : before === null ? "create" : "change";
    return `Self-improvement wants to ${what} /skills/${this.skillWrite.name}/${path} (selfImprovement.writeApproval).`;
  }

  get data(): Record<string, JsonValue> {
    return { ...this.skillWrite };
  }
}

export function isSkillApprovalSuspension(error: unknown): error is SkillApprovalSuspension {
  return typeof error === "object" && error !== null && (error as { $$type?: unknown }).$$type === "assembly-line.skill-approval-suspension";
}

/**
 * The gate one tool call's skill writes pass: a change goes through only when
 * the call was approved and the approval it last asked for names exactly this
 * change; otherwise the call pauses to ask (again).
 */
export function skillWriteGate(runs: RunStore, runId: string, call: { id: string; approved: boolean }): SkillWriteGate {
  return async (change, proposed) => {
    // The digests bind the approval to the change; the text shown is what they digest.
    const binding = digestJson([change.name, change.path, change.before, change.after]);
    if (call.approved) {
      const asked = (await runs.listEvents(runId)).filter((event) => event.type === "approval.requested" && event.data.callId === call.id).at(-1);
      const approvedWrite = asked?.data.skillWrite as { binding?: string } | undefined;
      if (approvedWrite?.binding === binding) return;
    }
    throw new SkillApprovalSuspension({ ...change, binding, proposed: proposedText(proposed) });
  };
}

/** `proposed` as an approval request carries it: the files' text up to PROPOSED_TEXT_LIMIT_BYTES in all, each cut on a character boundary. */
export function proposedText(proposed: SkillWriteProposal, limitBytes = PROPOSED_TEXT_LIMIT_BYTES): ProposedSkillText {
  const encoder = new TextEncoder();
  let room = limitBytes;
  let bytes = 0;
  let truncated = false;
  const files: Record<string, string> = {};
  for (const [path, text] of Object.entries(proposed.files)) {
    const size = encoder.encode(text).byteLength;
    bytes += size;
    if (size <= room) {
      files[path] = text;
      room -= size;
      continue;
    }
    // encodeInto writes whole characters only: `read` is where the text that fits ends.
    const { read } = encoder.encodeInto(text, new Uint8Array(room));
    files[path] = text.slice(0, read);
    room = 0;
    truncated = true;
  }
  return { files, removed: [...proposed.removed], bytes, truncated };
}
