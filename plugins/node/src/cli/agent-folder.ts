import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { stringOption, type ParsedCommand } from "./args.js";

/**
 * The agent folder of a command that works on what a build keeps (runs, approve, deny,
 * answer, resume, automations, skills): --agent, else the config's agent, else the
 * working folder. Checked before the runtime opens it, so that a mistyped folder or one
 * never built is named as such, with the command that fixes it, rather than reported as
 * a manifest missing from a path the reader never typed.
 */
export function builtAgentFolder(parsed: ParsedCommand, usage: string): string {
  const given = stringOption(parsed, "agent");
  const value = given ?? ".";
  const folder = resolve(value);
  const named = parsed.configured?.includes("agent") ? `the config's agent ${value}` : given !== undefined ? `--agent ${value}` : "the working folder";
  const where = folder === value ? "" : ` (${folder})`;
  const kind = statSync(folder, { throwIfNoEntry: false });
  if (kind === undefined || !kind.isDirectory()) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${named} ${kind === undefined ? "does not exist" : "is a file, not a folder"}${where}`, {
      fix: `Pass the agent folder (the one with agent.ts) as --agent <dir>. usage: ${usage}`,
    });
  }
  if (statSync(join(folder, ".assembly-line", "manifest.json"), { throwIfNoEntry: false }) === undefined) {
    throw new AssemblyLineError("AL_ERR_MANIFEST_MISSING", `${named}${where} has no build: there is no .assembly-line/manifest.json, so no runs, automations or skills are kept for it yet`, {
      fix: `Build it first with \`assembly-line build ${given !== undefined ? JSON.stringify(value) : "."}\` (\`assembly-line run\` builds too); if it is not the agent folder, pass the one with agent.ts as --agent <dir>.`,
    });
  }
  return value;
}
