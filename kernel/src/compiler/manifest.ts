import type { CaptureContent, CoreToolPolicy, DefaultContextOptions, RunBudgets, JsonSchema, JsonValue, NormalizedSchedule, ResolvedDefaultContextOptions, SideEffect, ToolCapability } from "@assemblyline-agents/core";

export const MANIFEST_VERSION = 1;

/** A file of the agent folder: posix path relative to the folder, sha256 of its text. */
export interface SourceRef {
  file: string;
  hash: string;
}

/** A context policy with the file that defines it (null: the implicit default) and, for the default, its effective part bounds. */
export type ContextManifest =
  | { kind: "default"; options: DefaultContextOptions; resolved: ResolvedDefaultContextOptions; source: SourceRef | null }
  | { kind: "custom"; name: string; options: Record<string, JsonValue>; extends: ContextManifest; hasBuild: boolean; source: SourceRef | null };

export interface ToolManifestEntry {
  name: string;
  /** authored: a new tool; override: replaces (or wraps) a built-in; disabled: removes a built-in. */
  kind: "authored" | "override" | "disabled";
  source: SourceRef;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema | null;
  needsApproval: false | { reason: string | null; sideEffect: SideEffect };
  sideEffect: SideEffect | null;
  defaultEnabled: boolean | null;
  capability: ToolCapability | null;
  hasToModelOutput: boolean;
}

/** Which plugin fills each gateway slot; live options are read from gateway.ts at boot. */
export interface GatewayManifest {
  source: SourceRef;
  slots: Partial<Record<"deploy" | "runtime" | "state" | "blob" | "sandbox" | "scheduler", { plugin: string }>>;
}

export interface ChannelManifestEntry {
  /** The file stem: `channels/discord.ts` is channel `discord`. */
  name: string;
  source: SourceRef;
  transport: "http";
  route: string;
  methods: string[];
  /** Any-of groups of env variables production ingress requires. */
  requiredSecretEnv: string[][];
  /** Which hooks the file exports; `deliverFailure` is listed only when it does (older manifests lack it). */
  exports: { normalizeHttp: boolean; deliver: boolean; resolveAttachment: boolean; deliverFailure?: true };
}

export interface SandboxManifest {
  source: SourceRef;
  adapter: string;
  image: string | null;
  workingDirectory: "/workspace";
  /** Everything sandbox.ts passes its adapter besides `adapter` (image, network, snapshot, ...). */
  options: Record<string, JsonValue>;
}

/** A static routine from `automations/<name>.ts`. */
export interface AutomationManifestEntry {
  /** The file stem. */
  name: string;
  source: SourceRef;
  schedule: NormalizedSchedule;
  message: string;
  conversationId: string | null;
  enabled: boolean;
}

/** A static connection from `connections/<name>.ts`; its definition is read from the file at boot. */
export interface ConnectionManifestEntry {
  /** The file stem: tools are `<name>__<tool>`. */
  name: string;
  source: SourceRef;
  kind: "mcp" | "openapi" | "http";
  description: string;
  /** The grant it uses (an id, never a secret), or null. */
  grant: string | null;
}

/** instrumentation.ts: the telemetry setup every host runs once at startup. */
export interface InstrumentationManifest {
  source: SourceRef;
  captureContent: CaptureContent;
  serviceName: string | null;
}

export interface HookManifestEntry {
  source: SourceRef;
  events: string[];
}

/** One skills/<name>/ folder: SKILL.md parsed, every file's text kept to seed the store. */
export interface SkillManifestEntry {
  name: string;
  description: string;
  /** Tools the skill activates when loaded. */
  tools: string[];
  /** The folder, relative to the agent folder (`skills/triage`). */
  dir: string;
  /** Relative path -> text; holds SKILL.md. */
  files: Record<string, string>;
  digest: string;
}

/** A subagents/<name>/ folder, compiled like a root agent and checked to only narrow its parent. */
export interface SubagentManifestEntry {
  name: string;
  /** The folder, relative to the root agent folder (`subagents/researcher`). */
  dir: string;
  description: string;
  /** Resolved: the subagent's own model, or its parent's. */
  model: string;
  /** No model of its own: its runs use the model the parent's run uses (a host-forced one included). */
  modelInherited: boolean;
  instructions: string;
  /** agent.ts, and instructions.md when the instructions come from it. */
  source: SourceRef;
  instructionsSource: SourceRef | null;
  outputSchema: JsonSchema | null;
  workspace: "shared" | "isolated";
  /** Parent tools it named (`tools: [...]`). */
  inheritedTools: string[];
  /** Parent connections it named (`connections: [...]`): its runs see these and no other. */
  connections: string[];
  /**
   * Its agent.ts `budgets` over its parent's (each no looser than the parent's),
   * absent when neither sets any: its runs run under these, host ceilings and defaults applied.
   */
  budgets?: RunBudgets;
  tools: ToolManifestEntry[];
  skills: SkillManifestEntry[];
  subagents: SubagentManifestEntry[];
}

/** What `assembly-line build` writes to `<agentDir>/.assembly-line/manifest.json`. */
export interface AgentManifest {
  manifestVersion: typeof MANIFEST_VERSION;
  agentRevision: string;
  /** The agent folder, relative to the artifact root. */
  sourceRoot: string;
  agent: {
    id: string;
    name: string;
    description: string | null;
    model: string;
    instructions: string;
    defaultTools: string[] | null;
    coreToolPolicy: CoreToolPolicy;
    /** agent.ts `budgets`; absent when the agent sets none (the defaults apply). */
    budgets?: RunBudgets;
    context: ContextManifest;
    /** agent.ts dynamicAutomations, with defaults applied (off). */
    dynamicAutomations: { dynamic: boolean; approval: boolean };
    /** agent.ts dynamicConnections, with defaults applied (off, approval on, no hosts; `grants` absent: a run may use none). */
    dynamicConnections: { dynamic: boolean; approval: boolean; allowedHosts: string[]; grants?: Record<string, string[]> };
    source: SourceRef;
    /** instructions.md, when the instructions come from it. */
    instructionsSource: SourceRef | null;
    selfImprovement: { writable: boolean; writeApproval: boolean };
  };
  tools: ToolManifestEntry[];
  hooks: HookManifestEntry[];
  resolver: SourceRef | null;
  context: SourceRef | null;
  gateway: GatewayManifest | null;
  channels: ChannelManifestEntry[];
  sandbox: SandboxManifest | null;
  skills: SkillManifestEntry[];
  subagents: SubagentManifestEntry[];
  automations: AutomationManifestEntry[];
  connections: ConnectionManifestEntry[];
  instrumentation: InstrumentationManifest | null;
  /** Every behaviour-bearing file, sorted: the revision covers them all and its copy keeps them (code, and the data files modules import). */
  sources: SourceRef[];
}
