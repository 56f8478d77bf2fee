import "../registry-kernel.js";
import { checkSandboxAdapterInstalled } from "@assemblyline-agents/registry";
import { buildAgent } from "@assemblyline-agents/runtime";
import { jsonOption, requirePositional, type ParsedCommand } from "../args.js";
import { staticModelCheck } from "../local-runtime.js";
import type { CommandIO } from "../io.js";
import { envelope, progress } from "../output.js";

export async function buildCommand(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const dir = requirePositional(parsed.positionals, 0, "agentDir", "assembly-line build [agentDir]");
  const json = jsonOption(parsed);
  progress(io, json)(`building ${dir}`);
  const { manifest, manifestPath } = await buildAgent(dir, { validateModel: staticModelCheck(undefined), checkSandboxAdapter: checkSandboxAdapterInstalled });
  if (json) {
    io.out(envelope({ agentId: manifest.agent.id, agentRevision: manifest.agentRevision, manifestPath, tools: manifest.tools.map((tool) => tool.name) }));
  } else {
    io.out(`built ${manifest.agent.id}: ${manifest.tools.length} tool file(s), ${manifest.hooks.length} hook(s)${manifest.resolver ? ", resolver" : ""}`);
    io.out(`manifest ${manifestPath}`);
    io.out(`agentRevision ${manifest.agentRevision}`);
  }
  return 0;
}
