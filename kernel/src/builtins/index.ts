import type { BuiltInToolName, ToolDefinition } from "@assemblyline-agents/core";
import { askQuestionTool } from "./ask-question.js";
import { toolCallTool, toolDescribeTool, toolSearchTool } from "./bridge-tools.js";
import { loadSkillTool } from "./load-skill.js";
import { spawnSubagentTool } from "./spawn-subagent.js";
import { bashTool, deleteTool, editTool, grepTool, listTool, readTool, writeTool } from "./filesystem-tools.js";

/**
 * The default definition of every built-in tool slot, for wrapping:
 * `defineTool({ ...builtInToolDefaults.write, execute(input, ctx) { ...; return write.execute(input, ctx); } })`.
 */
export const builtInToolDefaults: Readonly<Record<BuiltInToolName, ToolDefinition<any, any>>> = Object.freeze({
  read: readTool,
  write: writeTool,
  edit: editTool,
  delete: deleteTool,
  list: listTool,
  grep: grepTool,
  bash: bashTool,
  ask_question: askQuestionTool,
  spawn_subagent: spawnSubagentTool,
  load_skill: loadSkillTool,
  tool_search: toolSearchTool,
  tool_describe: toolDescribeTool,
  tool_call: toolCallTool,
});

export type BuiltInRequirement = "always" | "sandbox" | "skills" | "subagents" | "unavailable";

/**
 * Which built-ins need what before the model may be offered them. The file
 * tools work on /memory, /history, /files and /skills without a sandbox (only
 * their /workspace paths need one); `bash` needs one; load_skill needs skills
 * (or self-improvement, which can author them); spawn_subagent needs subagents.
 */
export const BUILT_IN_REQUIREMENTS: Readonly<Record<BuiltInToolName, BuiltInRequirement>> = Object.freeze({
  read: "always",
  write: "always",
  edit: "always",
  delete: "always",
  list: "always",
  grep: "always",
  bash: "sandbox",
  ask_question: "always",
  spawn_subagent: "subagents",
  load_skill: "skills",
  tool_search: "always",
  tool_describe: "always",
  tool_call: "always",
});
