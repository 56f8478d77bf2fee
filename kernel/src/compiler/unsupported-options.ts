import { existsSync } from "node:fs";
import { join } from "node:path";
import { AssemblyLineError, isSandboxDefinition, type AgentDefinition, type SandboxOptions } from "@assemblyline-agents/core";

/** What the check sees of an agent folder. */
export interface FolderUse {
  agentDir: string;
  agentFile: string;
  agent: AgentDefinition;
  /** sandbox.ts's default export, when the folder has one. */
  sandbox: { file: string; options: SandboxOptions } | null;
  /** The source file of a stem at the folder root (`instrumentation` -> `instrumentation.ts`), if any. */
  rootFile(stem: string): string | undefined;
}

/**
 * An option or file the SDK declares that this runtime version does not run.
 * `usedIn` returns where the folder uses it (a file, a key), or null.
 */
interface UnsupportedOption {
  option: string;
  usedIn(folder: FolderUse): string | null;
  fix: string;
}

const agentKey = (key: keyof AgentDefinition) => (folder: FolderUse) => (folder.agent[key] !== undefined ? `${folder.agentFile} ${key}:` : null);
const folder = (dir: string) => (use: FolderUse) => (existsSync(join(use.agentDir, dir)) ? `${dir}/` : null);
const rootFile = (stem: string) => (use: FolderUse) => use.rootFile(stem) ?? null;

/**
 * Every declared-but-unbuilt option, one entry each, refused at build so
 * nothing the user writes is silently ignored. Remove an entry when its
 * feature lands.
 */
export const UNSUPPORTED_OPTIONS: readonly UnsupportedOption[] = [

  { option: "dynamicAutomations", usedIn: agentKey("dynamicAutomations"), fix: "Remove dynamicAutomations from agent.ts." },
  { option: "dynamicConnections", usedIn: agentKey("dynamicConnections"), fix: "Remove dynamicConnections from agent.ts." },
  { option: "automations", usedIn: folder("automations"), fix: "Remove the automations/ folder." },
  { option: "connections", usedIn: folder("connections"), fix: "Remove the connections/ folder, or add connection tools from a plugin through the kernel's tools hook." },
  { option: "instrumentation.ts", usedIn: rootFile("instrumentation"), fix: "Remove instrumentation.ts; observe run events with hooks/ instead." },
  {
    option: "sandbox.ts adapter",
    usedIn: (use) => (use.sandbox && use.sandbox.options.adapter !== "local" ? `${use.sandbox.file} adapter: "${use.sandbox.options.adapter}"` : null),
    fix: 'Use adapter: "local" in sandbox.ts, or compose a sandbox plugin in gateway.ts.',
  },
  {
    option: "sandbox.ts snapshot",
    usedIn: (use) => (use.sandbox?.options.snapshot !== undefined ? `${use.sandbox!.file} snapshot:` : null),
    fix: "Remove snapshot from sandbox.ts.",
  },
  {
    option: "sandbox.ts network",
    // The local sandbox is a temp-dir emulation in the host's network namespace: it cannot honour a network policy.
    usedIn: (use) => (use.sandbox?.options.adapter === "local" && use.sandbox.options.network !== undefined ? `${use.sandbox.file} network:` : null),
    fix: "Remove network from sandbox.ts: the local sandbox shares the host's network.",
  },
];

/** Throw AL_ERR_NOT_SUPPORTED naming every unsupported option the folder uses. */
export function refuseUnsupportedOptions(use: FolderUse): void {
  const used = UNSUPPORTED_OPTIONS.map((entry) => ({ entry, where: entry.usedIn(use) })).filter((hit) => hit.where !== null);
  if (used.length === 0) return;
  throw new AssemblyLineError(
    "AL_ERR_NOT_SUPPORTED",
    `${used.map(({ entry, where }) => `${entry.option} (${where})`).join(", ")} ${used.length === 1 ? "is" : "are"} not supported by this runtime version`,
    { fix: used.map(({ entry }) => entry.fix).join(" "), details: { options: used.map(({ entry }) => entry.option) } },
  );
}

/** sandbox.ts's options for the check, or null; malformed exports are left to the sandbox compiler. */
export function sandboxUse(file: string | undefined, exported: unknown): FolderUse["sandbox"] {
  if (!file || !isSandboxDefinition(exported) || typeof exported.adapter !== "string") return null;
  return { file, options: exported };
}
