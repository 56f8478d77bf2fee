import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  AssemblyLineError,
  isAgentDefinition,
  isDisabledTool,
  isChannelDefinition,
  isConnectionDefinition,
  type ConnectionDefinition,
  isGatewayDefinition,
  isHookDefinition,
  isRunResolverDefinition,
  isToolDefinition,
  type AgentDefinition,
  type ChannelDefinition,
  type ChannelModule,
  type GatewayDefinition,
  type HookDefinition,
  type InstrumentationDefinition,
  type RunResolverDefinition,
  type ToolDefinition,
} from "@assemblyline-agents/core";
import { MANIFEST_FILE } from "./build.js";
import { createModuleLoader } from "./load-module.js";
import { MANIFEST_VERSION, type AgentManifest } from "./manifest.js";
import { hashSource, listBehaviourFiles } from "./source-files.js";
import { checkInstrumentation, startInstrumentation, type ActiveInstrumentation } from "../telemetry/instrumentation.js";

/** A subagent's live code: its agent.ts, its own tools, its subagents. */
export interface SubagentBundle {
  agent: AgentDefinition;
  tools: Record<string, ToolDefinition<any, any>>;
  subagents: Record<string, SubagentBundle>;
}

/** The live code behind a manifest: what the kernel calls. */
export interface SourceBundle {
  agent: AgentDefinition;
  /** Authored and overriding tools by name (disabled entries have no code). */
  tools: Record<string, ToolDefinition<any, any>>;
  /** Hook definitions with the file they came from. */
  hooks: Array<{ file: string; hook: HookDefinition }>;
  resolver: RunResolverDefinition | null;
  /** channels/*.ts by name: the config plus the functions the file exports. */
  channels: Record<string, ChannelModule>;
  /** connections/*.ts by name: static connections the host's connections provider serves. */
  connections: Record<string, ConnectionDefinition>;
  /** gateway.ts, when the folder has one: live descriptors for the host to materialize. */
  gateway: GatewayDefinition | null;
  /** subagents/<name>/ by name; absent in bundles assembled by hand before subagents existed. */
  subagents?: Record<string, SubagentBundle>;
  /** instrumentation.ts, when the folder has one (its setup not yet run). */
  instrumentation: InstrumentationDefinition | null;
}

export interface RuntimeBundle {
  manifest: AgentManifest;
  sourceBundle: SourceBundle;
  /** Module-resolution hint for packaged dependencies. */
  artifactRoot: string;
  /** instrumentation.ts after its setup() ran; absent when the folder has none. */
  instrumentation?: ActiveInstrumentation;
}

export interface LoadRuntimeBundleOptions {
  /** What instrumentation.ts's setup receives as env (default process.env). */
  env?: Record<string, string | undefined>;
}

/**
 * Read a built artifact and run instrumentation.ts's setup() (once per call: call
 * it once at startup); spread the result into `new OpenEveRuntime({ ...bundle, state })`.
 */
export async function loadRuntimeBundle(artifactRootInput: string, options: LoadRuntimeBundleOptions = {}): Promise<RuntimeBundle> {
  const artifactRoot = resolve(artifactRootInput);
  const manifestPath = join(artifactRoot, MANIFEST_FILE);
  if (!existsSync(manifestPath)) {
    throw new AssemblyLineError("AL_ERR_MANIFEST_MISSING", `no manifest at ${manifestPath}`, {
      fix: "Run `assembly-line build <agentDir>` and pass <agentDir>/.assembly-line.",
    });
  }
  const manifest = JSON.parse(await readFile(manifestPath, "utf8")) as AgentManifest;
  if (manifest.manifestVersion !== MANIFEST_VERSION) {
    throw new AssemblyLineError("AL_ERR_MANIFEST_VERSION", `${manifestPath} has manifestVersion ${String(manifest.manifestVersion)}, this runtime reads ${MANIFEST_VERSION}`, {
      fix: "Rebuild the agent with this runtime's `assembly-line build`.",
    });
  }
  const agentDir = resolve(artifactRoot, manifest.sourceRoot);
  const sourceBundle = await loadSourceBundle(agentDir, manifest);
  if (!manifest.instrumentation || !sourceBundle.instrumentation) return { manifest, sourceBundle, artifactRoot };
  const instrumentation = await startInstrumentation(sourceBundle.instrumentation, manifest.instrumentation.source.file, options.env ?? process.env);
  return { manifest, sourceBundle, artifactRoot, instrumentation };
}

async function loadSourceBundle(agentDir: string, manifest: AgentManifest): Promise<SourceBundle> {
  for (const source of manifest.sources) {
    const current = existsSync(join(agentDir, source.file)) ? (await hashSource(agentDir, source.file)).hash : "(deleted)";
    if (current !== source.hash) {
      throw new AssemblyLineError("AL_ERR_MANIFEST_STALE", `${source.file} changed after the manifest was built (revision ${manifest.agentRevision})`, {
        fix: `Run \`assembly-line build ${agentDir}\` again.`,
      });
    }
  }
  // A file the build never saw (a new tool, or one whose build failed) would be left out without a word.
  const built = new Set(manifest.sources.map((source) => source.file));
  const added = (await listBehaviourFiles(agentDir)).filter((file) => !built.has(file));
  if (added.length > 0) {
    throw new AssemblyLineError("AL_ERR_MANIFEST_STALE", `${added.join(", ")} ${added.length === 1 ? "was" : "were"} added after the manifest was built (revision ${manifest.agentRevision})`, {
      fix: `Run \`assembly-line build ${agentDir}\` again (it names any file that does not build), or remove ${added.length === 1 ? "the file" : "the files"}.`,
    });
  }
  const load = createModuleLoader(agentDir);
  const defaultExport = async (file: string) => (await load(join(agentDir, file))).default;

  const agent = await defaultExport(manifest.agent.source.file);
  if (!isAgentDefinition(agent)) throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${manifest.agent.source.file} no longer exports defineAgent(...)`);
  const loadTools = async (entries: AgentManifest["tools"]) => {
    const tools: Record<string, ToolDefinition<any, any>> = {};
    for (const entry of entries) {
      const tool = await defaultExport(entry.source.file);
      if (entry.kind === "disabled" && isDisabledTool(tool)) continue;
      if (!isToolDefinition(tool)) throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${entry.source.file} no longer exports defineTool(...)`);
      tools[entry.name] = tool;
    }
    return tools;
  };
  const tools = await loadTools(manifest.tools);
  const loadSubagents = async (entries: AgentManifest["subagents"]): Promise<Record<string, SubagentBundle>> => {
    const bundles: Record<string, SubagentBundle> = {};
    for (const entry of entries) {
      const subagent = await defaultExport(entry.source.file);
      if (!isAgentDefinition(subagent)) throw new AssemblyLineError("AL_ERR_SUBAGENT_DEFINITION", `${entry.source.file} no longer exports defineAgent(...)`);
      bundles[entry.name] = { agent: subagent, tools: await loadTools(entry.tools), subagents: await loadSubagents(entry.subagents) };
    }
    return bundles;
  };
  const subagents = await loadSubagents(manifest.subagents ?? []);
  const hooks: SourceBundle["hooks"] = [];
  for (const entry of manifest.hooks) {
    const hook = await defaultExport(entry.source.file);
    if (!isHookDefinition(hook)) throw new AssemblyLineError("AL_ERR_HOOK_DEFINITION", `${entry.source.file} no longer exports defineHook(...)`);
    hooks.push({ file: entry.source.file, hook });
  }
  let resolver: RunResolverDefinition | null = null;
  if (manifest.resolver) {
    const loaded = await defaultExport(manifest.resolver.file);
    if (!isRunResolverDefinition(loaded)) throw new AssemblyLineError("AL_ERR_RESOLVER_DEFINITION", `${manifest.resolver.file} no longer exports defineRunResolver(...)`);
    resolver = loaded;
  }
  let gateway: GatewayDefinition | null = null;
  if (manifest.gateway) {
    const loaded = await defaultExport(manifest.gateway.source.file);
    if (!isGatewayDefinition(loaded)) throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", `${manifest.gateway.source.file} no longer exports defineGateway(...)`);
    gateway = loaded;
  }
  const channels: Record<string, ChannelModule> = {};
  for (const entry of manifest.channels) {
    const module = await load(join(agentDir, entry.source.file));
    const config = module.default as ChannelDefinition & Partial<ChannelModule>;
    if (!isChannelDefinition(config)) throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `${entry.source.file} no longer exports defineChannel(...)`);
    const pick = <K extends "normalizeHttp" | "deliver" | "resolveAttachment" | "deliverFailure">(key: K) => (module[key] ?? config[key]) as ChannelModule[K] | undefined;
    const normalizeHttp = pick("normalizeHttp");
    const deliver = pick("deliver");
    const deliverFailure = pick("deliverFailure");
    const resolveAttachment = pick("resolveAttachment");
    channels[entry.name] = {
      config: { transport: "http", route: entry.route, methods: entry.methods as NonNullable<ChannelModule["config"]["methods"]>, ingress: { requiredSecretEnv: entry.requiredSecretEnv } },
      ...(normalizeHttp ? { normalizeHttp } : {}),
      ...(deliver ? { deliver } : {}),
      ...(deliverFailure ? { deliverFailure } : {}),
      ...(resolveAttachment ? { resolveAttachment } : {}),
    };
  }
  let instrumentation: InstrumentationDefinition | null = null;
  if (manifest.instrumentation) {
    const loaded = await defaultExport(manifest.instrumentation.source.file);
    checkInstrumentation(loaded, manifest.instrumentation.source.file);
    instrumentation = loaded;
  }
  const connections: Record<string, ConnectionDefinition> = {};
  for (const entry of manifest.connections ?? []) {
    const definition = await defaultExport(entry.source.file);
    if (!isConnectionDefinition(definition)) throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `${entry.source.file} no longer exports a connection definition`);
    connections[entry.name] = definition;
  }
  return { agent, tools, hooks, resolver, gateway, channels, subagents, connections, instrumentation };
}
