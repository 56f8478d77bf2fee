import { checkSandboxAdapterInstalled } from "@assemblyline-agents/registry";
import { buildAgent } from "@assemblyline-agents/runtime";
import { parseCommand, requirePositional } from "../args.js";
import { staticModelCheck } from "../local-runtime.js";
import type { CommandIO } from "../io.js";

const USAGE = "assembly-line build <agentDir> [--json]";

export async function buildCommand(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommand(args, { json: { type: "boolean" } }, USAGE);
  const dir = requirePositional(positionals, 0, "agentDir", USAGE);
  const { manifest, manifestPath } = await buildAgent(dir, { validateModel: staticModelCheck(undefined), checkSandboxAdapter: checkSandboxAdapterInstalled });
  if (values.json) {
    io.out(JSON.stringify({ agentRevision: manifest.agentRevision, manifestPath, tools: manifest.tools.map((tool) => tool.name) }));
  } else {
    io.out(`built ${manifest.agent.id}: ${manifest.tools.length} tool file(s), ${manifest.hooks.length} hook(s)${manifest.resolver ? ", resolver" : ""}`);
    io.out(`manifest ${manifestPath}`);
    io.out(`agentRevision ${manifest.agentRevision}`);
  }
  return 0;
}
