import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { AssemblyLineError, type AgentDefinition } from "@assemblyline-agents/core";
import type { SourceRef } from "./manifest.js";
import { hashSource } from "./source-files.js";

export const INSTRUCTIONS_FILE = "instructions.md";

/**
 * An agent's instructions: agent.ts `instructions`, or instructions.md beside it
 * (eve's layout). Both is an error, so nobody wonders which one the model sees.
 * `dir` is the agent's folder, `prefix` its path from the root agent folder.
 */
export async function resolveInstructions(
  rootDir: string,
  prefix: string,
  agentFile: string,
  agent: AgentDefinition,
): Promise<{ instructions: string; instructionsSource: SourceRef | null }> {
  const file = `${prefix}${INSTRUCTIONS_FILE}`;
  const hasFile = existsSync(join(rootDir, file));
  if (hasFile && agent.instructions !== undefined) {
    throw new AssemblyLineError("AL_ERR_AGENT_INSTRUCTIONS_TWICE", `${prefix}${agentFile} sets instructions: and ${file} exists too`, {
      fix: `Keep one: remove instructions: from ${prefix}${agentFile}, or delete ${file}.`,
    });
  }
  if (!hasFile) return { instructions: agent.instructions ?? "", instructionsSource: null };
  const text = (await readFile(join(rootDir, file), "utf8")).replace(/\r\n/g, "\n").trim();
  return { instructions: text, instructionsSource: await hashSource(rootDir, file) };
}
