import { createTwoFilesPatch } from "diff";
import { AssemblyLineError } from "@assemblyline-agents/core";
import type { SkillView } from "@assemblyline-agents/runtime";
import { builtAgentFolder } from "../agent-folder.js";
import { jsonOption, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import { commandLogger } from "../command-logger.js";
import type { CommandIO } from "../io.js";
import { openLocalRuntime, type LocalRuntime } from "../local-runtime.js";
import { envelope } from "../output.js";
import { stateDirOption } from "../state-dir.js";

const USAGE = "assembly-line skills list | show <name> | diff <name> | reset <name> [--agent <dir>] [--subagent <path>] [--json]";

async function open(parsed: ParsedCommand, io: CommandIO, sub: string): Promise<LocalRuntime> {
  const agentDir = builtAgentFolder(parsed, USAGE);
  // list, show and diff read the store: a mistyped --state-dir is refused, not created.
  const stateDir = stateDirOption(parsed, { mustExist: sub !== "reset", usage: USAGE });
  const logger = commandLogger(io, jsonOption(parsed));
  return openLocalRuntime({ agentDir, build: false, ...(stateDir ? { stateDir } : {}), ...(logger ? { logger } : {}) });
}

/** Where a skill stands against the seed the current build holds. */
function standing(skill: SkillView, seedDigest: string | undefined): string {
  if (skill.conflict) return `changed by ${skill.changedBy}; the seed of ${skill.conflict.seedRevision} was not applied (conflict)`;
  if (seedDigest === undefined) return `authored by ${skill.changedBy}`;
  if (skill.digest === seedDigest) return "as seeded";
  return `changed by ${skill.changedBy}`;
}

/** `skills list|show|diff|reset`: the durable skill store of the agent (or one of its subagents). */
export const skillsCommand = (sub: string) => async (parsed: ParsedCommand, io: CommandIO): Promise<number> => {
  const json = jsonOption(parsed);
  const name = sub === "list" ? undefined : requirePositional(parsed.positionals, 0, "name", USAGE);
  const local = await open(parsed, io, sub);
  try {
    const library = local.runtime.skills(stringOption(parsed, "subagent") ?? "");
    if (sub === "list") {
      const skills = await library.list();
      if (json) io.out(envelope({ skills: skills.map((skill) => ({ name: skill.name, description: skill.description, digest: skill.digest, changedBy: skill.changedBy, conflict: skill.conflict ?? null })) }));
      else for (const skill of skills) io.out(`${skill.name.padEnd(24)} ${standing(skill, library.seedOf(skill.name)?.digest)}  ${skill.description}`);
      if (!json && skills.length === 0) io.out("no skills");
      return 0;
    }
    const skill = await library.get(name!);
    const seed = library.seedOf(name!);
    if (sub === "reset") {
      const change = await library.reset(name!);
      io.out(json ? envelope(change) : change.after === null ? `removed ${name} (it has no seed)` : `reset ${name} to its seed (${change.after})`);
      return 0;
    }
    if (!skill) {
      throw new AssemblyLineError("AL_ERR_SKILL_NOT_FOUND", `no skill "${name}"`, { fix: "List the skills with `assembly-line skills list`." });
    }
    if (sub === "show") {
      if (json) {
        io.out(envelope(skill));
        return 0;
      }
      io.out(`${skill.name}  ${standing(skill, seed?.digest)}  ${skill.digest}`);
      for (const [path, text] of Object.entries(skill.files)) io.out(`\n--- ${path}\n${text}`);
      return 0;
    }
    // diff: the seed in this build against what the store holds.
    const paths = [...new Set([...Object.keys(seed?.files ?? {}), ...Object.keys(skill.files)])].sort();
    const patches: Array<{ path: string; patch: string }> = [];
    for (const path of paths) {
      const before = seed?.files[path] ?? "";
      const after = skill.files[path] ?? "";
      if (before === after) continue;
      patches.push({ path, patch: createTwoFilesPatch(`seed/${skill.name}/${path}`, `store/${skill.name}/${path}`, before, after).trimEnd() });
    }
    if (json) io.out(envelope({ name, seeded: seed !== undefined, patches }));
    else for (const { patch } of patches) io.out(patch);
    if (!json && patches.length === 0) io.out(seed ? `${name} is as seeded` : `${name} has no seed in this build`);
    return 0;
  } finally {
    await local.close();
  }
};
