import type { PendingSkillWrite } from "@assemblyline-agents/runtime";

/**
 * What a pending skill write does to its file, as the CLI and the inspector show it: a write that
 * leaves no text deletes it; one where there was none creates it. Here rather than in the runtime's
 * barrel, which the CLI must not load for a command that only prints.
 */
export function skillWriteAction(write: PendingSkillWrite): "create" | "change" | "delete" {
  const { proposed } = write;
  const deletes = write.after === null || (proposed !== undefined && Object.keys(proposed.files).length === 0 && proposed.removed.includes(write.path));
  return deletes ? "delete" : write.before === null ? "create" : "change";
}
