import type { CoreToolPolicy, DefaultContextOptions, JsonSchema, JsonValue, SideEffect, ToolCapability } from "@assemblyline-agents/core";

export const MANIFEST_VERSION = 1;

/** A file of the agent folder: posix path relative to the folder, sha256 of its text. */
export interface SourceRef {
  file: string;
  hash: string;
}

export type ContextManifest =
  | { kind: "default"; options: DefaultContextOptions }
  | { kind: "custom"; name: string; options: Record<string, JsonValue>; extends: ContextManifest; hasBuild: boolean };

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
  exports: { normalizeHttp: boolean; deliver: boolean; resolveAttachment: boolean };
}

export interface SandboxManifest {
  source: SourceRef;
  adapter: string;
  image: string | null;
  workingDirectory: "/workspace";
  /** Everything sandbox.ts passes its adapter besides `adapter` (image, network, snapshot, ...). */
  options: Record<string, JsonValue>;
}

export interface HookManifestEntry {
  source: SourceRef;
  events: string[];
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
    context: ContextManifest;
    source: SourceRef;
  };
  tools: ToolManifestEntry[];
  hooks: HookManifestEntry[];
  resolver: SourceRef | null;
  context: SourceRef | null;
  gateway: GatewayManifest | null;
  channels: ChannelManifestEntry[];
  sandbox: SandboxManifest | null;
  /** Every behaviour-bearing file, sorted: the revision covers them all. */
  sources: SourceRef[];
}
