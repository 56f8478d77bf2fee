import { existsSync, statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, unlink, writeFile } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import {
  AssemblyLineError,
  BUILT_IN_TOOL_NAMES,
  GATEWAY_SLOTS,
  isAdapterDescriptor,
  isAgentDefinition,
  isChannelDefinition,
  isGatewayDefinition,
  isSandboxDefinition,
  type ChannelDefinition,
  isApprovalPolicy,
  isContextPolicy,
  isDisabledTool,
  isHookDefinition,
  isRunResolverDefinition,
  isToolDefinition,
  type AgentDefinition,
  type ContextPolicy,
  type JsonValue,
  type ToolDefinition,
} from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import { compileSchema } from "../schema.js";
import { createModuleLoader } from "./load-module.js";
import {
  MANIFEST_VERSION,
  type AgentManifest,
  type ContextManifest,
  type ChannelManifestEntry,
  type GatewayManifest,
  type SandboxManifest,
  type HookManifestEntry,
  type SourceRef,
  type ToolManifestEntry,
} from "./manifest.js";
import { hashSource, listBehaviourFiles } from "./source-files.js";

export const ARTIFACT_DIR = ".assembly-line";
export const MANIFEST_FILE = "manifest.json";
const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const SOURCE_EXTENSIONS = [".ts", ".mts", ".js", ".mjs"];

export interface BuildOptions {
  /** Check a static model spec (e.g. the engine's catalog); throw to fail the build. */
  validateModel?(modelSpec: string): void | Promise<void>;
}

export interface BuildResult {
  manifest: AgentManifest;
  manifestPath: string;
  artifactRoot: string;
}

/** Compile an agent folder into `<agentDir>/.assembly-line/manifest.json`. */
export async function buildAgent(agentDirInput: string, options: BuildOptions = {}): Promise<BuildResult> {
  const agentDir = resolve(agentDirInput);
  if (!existsSync(agentDir) || !statSync(agentDir).isDirectory()) {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `agent folder ${agentDir} does not exist`, {
      fix: "Pass the folder that contains agent.ts.",
    });
  }
  const load = createModuleLoader(agentDir);
  const agentFile = findSource(agentDir, "agent");
  if (!agentFile) {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentDir} has no agent.ts`, {
      fix: 'Create agent.ts with `export default defineAgent({ model: "openai/gpt-5.4-mini" })`.',
    });
  }
  const agentModule = await load(join(agentDir, agentFile));
  const agent = agentModule.default;
  if (!isAgentDefinition(agent)) {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile} does not default-export defineAgent(...)`, {
      fix: 'Write `export default defineAgent({ model: "provider/model", instructions: "..." })`.',
    });
  }
  if ("harness" in agent) {
    throw new AssemblyLineError("AL_ERR_AGENT_HARNESS_KEY", `${agentFile} declares harness:, which agents may not choose`, {
      fix: "Remove the harness: key; hosts pick the engine with agentHarness or modelHarnesses in RuntimeOptions.",
    });
  }
  if (typeof agent.model !== "string" || agent.model.trim() === "") {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile} has no model`, {
      fix: 'Set model: "provider/model", e.g. "openai/gpt-5.4-mini".',
    });
  }
  await options.validateModel?.(agent.model);

  const tools = await compileTools(agentDir, load);
  const hooks = await compileHooks(agentDir, load);
  const resolver = await compileResolver(agentDir, load);
  const contextSource = await compileContextFile(agentDir, load);
  const gateway = await compileGateway(agentDir, load);
  const channels = await compileChannels(agentDir, load);
  const sandbox = await compileSandbox(agentDir, load);
  const agentContext = agent.context === undefined ? undefined : agent.context;
  if (agentContext !== undefined && !isContextPolicy(agentContext)) {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `${agentFile} context: is not a context policy`, {
      fix: "Use defaultContext({...}) or a defineContext({...}) exported from context.ts.",
    });
  }
  const sources = await Promise.all((await listBehaviourFiles(agentDir)).map((file) => hashSource(agentDir, file)));
  const artifactRoot = join(agentDir, ARTIFACT_DIR);

  const body: Omit<AgentManifest, "agentRevision"> = {
    manifestVersion: MANIFEST_VERSION,
    sourceRoot: relative(artifactRoot, agentDir) || ".",
    agent: {
      id: agent.id ?? basename(agentDir),
      name: agent.name ?? agent.id ?? basename(agentDir),
      description: agent.description ?? null,
      model: agent.model,
      instructions: agent.instructions ?? "",
      defaultTools: agent.defaultTools ?? null,
      coreToolPolicy: agent.coreToolPolicy ?? {},
      context: describeContext(agentContext),
      source: await hashSource(agentDir, agentFile),
    },
    tools,
    hooks,
    resolver,
    context: contextSource,
    gateway,
    channels,
    sandbox,
    sources,
  };
  // sourceRoot is a local layout detail, not behaviour: leave it out of the revision.
  const { sourceRoot: _layout, ...revisionInput } = body;
  const manifest: AgentManifest = { ...body, agentRevision: `rev_${digestJson(revisionInput).slice(0, 32)}` };

  await mkdir(artifactRoot, { recursive: true });
  const manifestPath = join(artifactRoot, MANIFEST_FILE);
  await writeAtomically(manifestPath, JSON.stringify(manifest, null, 2) + "\n");
  await writeFile(join(artifactRoot, ".gitignore"), "*\n");
  return { manifest, manifestPath, artifactRoot };
}

/**
 * Write-temp, fsync, rename: a host reading the manifest while a build runs (or
 * after a crash mid-build) sees the old manifest or the new one, never half of one.
 */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    const handle = await open(temp, "w");
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

function findSource(dir: string, stem: string): string | undefined {
  const ext = SOURCE_EXTENSIONS.find((candidate) => existsSync(join(dir, stem + candidate)));
  return ext === undefined ? undefined : stem + ext;
}

async function listSourceDir(agentDir: string, dir: string): Promise<string[]> {
  const full = join(agentDir, dir);
  if (!existsSync(full)) return [];
  return (await readdir(full))
    .filter((name) => SOURCE_EXTENSIONS.some((ext) => name.endsWith(ext)) && !name.endsWith(".d.ts") && !name.startsWith("."))
    .sort()
    .map((name) => `${dir}/${name}`);
}

function stemOf(file: string): string {
  return basename(file).replace(/\.(ts|mts|js|mjs)$/, "");
}

type Loader = ReturnType<typeof createModuleLoader>;

async function compileTools(agentDir: string, load: Loader): Promise<ToolManifestEntry[]> {
  const entries: ToolManifestEntry[] = [];
  const builtIns = new Set<string>(BUILT_IN_TOOL_NAMES);
  for (const file of await listSourceDir(agentDir, "tools")) {
    const name = stemOf(file);
    if (!SNAKE_CASE.test(name)) {
      const suggestion = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/[-\s.]+/g, "_").toLowerCase();
      throw new AssemblyLineError("AL_ERR_TOOL_NAME", `${file}: tool name "${name}" is not snake_case`, {
        fix: `Rename the file to tools/${suggestion}.ts; the filename stem is the name the model sees.`,
      });
    }
    const exported = (await load(join(agentDir, file))).default;
    const source = await hashSource(agentDir, file);
    if (isDisabledTool(exported)) {
      if (!builtIns.has(name)) {
        throw new AssemblyLineError("AL_ERR_DISABLE_UNKNOWN_BUILTIN", `${file}: disableTool() but "${name}" is not a built-in tool`, {
          fix: `Name the file after the built-in to remove (one of: ${BUILT_IN_TOOL_NAMES.join(", ")}), or delete the file.`,
        });
      }
      entries.push(disabledEntry(name, source));
      continue;
    }
    if (!isToolDefinition(exported)) {
      throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${file} does not default-export defineTool(...) or disableTool()`, {
        fix: "Write `export default defineTool({ description, inputSchema, execute })`.",
      });
    }
    entries.push(toolEntry(file, name, exported, source, builtIns.has(name) ? "override" : "authored"));
  }
  return entries;
}

function disabledEntry(name: string, source: SourceRef): ToolManifestEntry {
  return {
    name,
    kind: "disabled",
    source,
    description: "",
    inputSchema: {},
    outputSchema: null,
    needsApproval: false,
    sideEffect: null,
    defaultEnabled: null,
    capability: null,
    hasToModelOutput: false,
  };
}

function toolEntry(file: string, name: string, tool: ToolDefinition, source: SourceRef, kind: "authored" | "override"): ToolManifestEntry {
  for (const field of ["description", "inputSchema", "execute"] as const) {
    if (tool[field] === undefined) {
      throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${file}: defineTool is missing ${field}`, {
        fix: "defineTool needs description (string), inputSchema (JSON Schema) and execute(input, ctx).",
      });
    }
  }
  if (typeof tool.description !== "string" || tool.description.trim() === "") {
    throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${file}: description must be a non-empty string`, {
      fix: "Describe what the tool does for the model; it drives tool selection.",
    });
  }
  for (const field of ["inputSchema", "outputSchema"] as const) {
    const schema = tool[field];
    if (schema === undefined) continue;
    try {
      compileSchema(schema);
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_TOOL_SCHEMA", `${file}: ${field} is not a valid JSON Schema: ${(error as Error).message}`, {
        fix: `Correct the ${field} of tool "${name}" (ajv must compile it).`,
      });
    }
  }
  const approval = tool.needsApproval;
  return {
    name,
    kind,
    source,
    description: tool.description,
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema ?? null,
    needsApproval: isApprovalPolicy(approval)
      ? { reason: approval.reason, sideEffect: approval.sideEffect }
      : approval === true
        ? { reason: null, sideEffect: tool.sideEffect ?? "external" }
        : false,
    sideEffect: tool.sideEffect ?? null,
    defaultEnabled: tool.defaultEnabled ?? null,
    capability: tool.capability ?? null,
    hasToModelOutput: typeof tool.toModelOutput === "function",
  };
}

async function compileHooks(agentDir: string, load: Loader): Promise<HookManifestEntry[]> {
  const entries: HookManifestEntry[] = [];
  for (const file of await listSourceDir(agentDir, "hooks")) {
    const hook = (await load(join(agentDir, file))).default;
    if (!isHookDefinition(hook)) {
      throw new AssemblyLineError("AL_ERR_HOOK_DEFINITION", `${file} does not default-export defineHook(...)`, {
        fix: 'Write `export default defineHook({ events: { "run.completed"(event, ctx) { ... } } })`.',
      });
    }
    const notFunctions = Object.entries(hook.events).filter(([, handler]) => typeof handler !== "function");
    if (notFunctions.length > 0) {
      throw new AssemblyLineError("AL_ERR_HOOK_DEFINITION", `${file}: handler for ${notFunctions.map(([type]) => `"${type}"`).join(", ")} is not a function`, {
        fix: "Each key of events maps an event type (or \"*\") to a function (event, ctx) => void.",
      });
    }
    entries.push({ source: await hashSource(agentDir, file), events: Object.keys(hook.events).sort() });
  }
  return entries;
}

async function compileResolver(agentDir: string, load: Loader): Promise<SourceRef | null> {
  const file = findSource(agentDir, "resolvers");
  if (!file) return null;
  const resolver = (await load(join(agentDir, file))).default;
  if (!isRunResolverDefinition(resolver)) {
    throw new AssemblyLineError("AL_ERR_RESOLVER_DEFINITION", `${file} does not default-export defineRunResolver(...)`, {
      fix: "Write `export default defineRunResolver(async (ctx) => { ...; return null; })`.",
    });
  }
  return hashSource(agentDir, file);
}

async function compileContextFile(agentDir: string, load: Loader): Promise<SourceRef | null> {
  const file = findSource(agentDir, "context");
  if (!file) return null;
  const exports = Object.values(await load(join(agentDir, file)));
  if (!exports.some(isContextPolicy)) {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `${file} exports no context policy`, {
      fix: "Export a defineContext({...}) (or defaultContext({...})) and use it as context: in agent.ts.",
    });
  }
  return hashSource(agentDir, file);
}

async function compileChannels(agentDir: string, load: Loader): Promise<ChannelManifestEntry[]> {
  const entries: ChannelManifestEntry[] = [];
  const routes = new Map<string, string>();
  for (const file of await listSourceDir(agentDir, "channels")) {
    const name = stemOf(file);
    const module = await load(join(agentDir, file));
    const config = module.default;
    const fail = (problem: string, fix: string): never => {
      throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `${file}: ${problem}`, { fix });
    };
    if (!isChannelDefinition(config)) fail("does not default-export defineChannel(...) or a provider helper", 'Write `export default defineChannel({ transport: "http", route: "/message", methods: ["POST"] })`.');
    const channel = config as ChannelDefinition;
    if (channel.transport !== "http") fail(`transport ${JSON.stringify(channel.transport)} is not supported`, 'Use transport: "http".');
    if (typeof channel.route !== "string" || !channel.route.startsWith("/")) fail(`route ${JSON.stringify(channel.route)} must start with /`, 'Use a path such as "/message".');
    const methods = channel.methods ?? ["POST"];
    const badMethod = methods.find((method) => !["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method));
    if (badMethod) fail(`method ${JSON.stringify(badMethod)} is not an HTTP method this host routes`, "Use GET, POST, PUT, PATCH or DELETE.");
    const groups = channel.ingress?.requiredSecretEnv ?? [];
    if (!Array.isArray(groups) || groups.some((group) => !Array.isArray(group) || group.length === 0 || group.some((name) => typeof name !== "string" || !/^[A-Z_][A-Z0-9_]*$/.test(name)))) {
      fail("ingress.requiredSecretEnv must be any-of groups of env variable names", 'Write ingress: { requiredSecretEnv: [["MY_WEBHOOK_SECRET"]] }.');
    }
    const taken = routes.get(channel.route);
    if (taken) fail(`route ${channel.route} is also served by ${taken}`, "Give each channel its own route.");
    routes.set(channel.route, file);
    const exported = (key: "normalizeHttp" | "deliver" | "resolveAttachment") =>
      typeof module[key] === "function" || typeof (channel as unknown as Record<string, unknown>)[key] === "function";
    entries.push({
      name,
      source: await hashSource(agentDir, file),
      transport: "http",
      route: channel.route,
      methods,
      requiredSecretEnv: groups,
      exports: { normalizeHttp: exported("normalizeHttp"), deliver: exported("deliver"), resolveAttachment: exported("resolveAttachment") },
    });
  }
  return entries;
}

async function compileSandbox(agentDir: string, load: Loader): Promise<SandboxManifest | null> {
  const file = findSource(agentDir, "sandbox");
  if (!file) return null;
  const sandbox = (await load(join(agentDir, file))).default;
  if (!isSandboxDefinition(sandbox) || typeof sandbox.adapter !== "string") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `${file} does not default-export defineSandbox({ adapter, ... })`, {
      fix: 'Write `export default defineSandbox({ adapter: "local", image: "node:22" })`.',
    });
  }
  const workingDirectory = (sandbox as { workingDirectory?: unknown }).workingDirectory;
  if (workingDirectory !== undefined && workingDirectory !== "/workspace") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `${file}: workingDirectory ${JSON.stringify(workingDirectory)} is not allowed`, {
      fix: "Omit workingDirectory or set it to /workspace: hosted shell commands see a real, physical /workspace, so other aliases are invalid (/runtime is retired).",
    });
  }
  return { source: await hashSource(agentDir, file), adapter: sandbox.adapter, image: sandbox.image ?? null, workingDirectory: "/workspace" };
}

async function compileGateway(agentDir: string, load: Loader): Promise<GatewayManifest | null> {
  const file = findSource(agentDir, "gateway");
  if (!file) return null;
  const gateway = (await load(join(agentDir, file))).default;
  if (!isGatewayDefinition(gateway)) {
    throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", `${file} does not default-export defineGateway(...)`, {
      fix: 'Write `export default defineGateway({ state: adapter("local"), ... })`.',
    });
  }
  const slots: GatewayManifest["slots"] = {};
  for (const slot of GATEWAY_SLOTS) {
    const descriptor = gateway[slot];
    if (descriptor === undefined) continue;
    if (!isAdapterDescriptor(descriptor)) {
      throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", `${file}: ${slot} is not an adapter descriptor`, {
        fix: `Use a plugin helper (e.g. neonPostgres()) or adapter("name") for ${slot}.`,
      });
    }
    slots[slot] = { plugin: descriptor.plugin };
  }
  return { source: await hashSource(agentDir, file), slots };
}

function describeContext(policy: ContextPolicy | undefined): ContextManifest {
  if (policy === undefined) return { kind: "default", options: {} };
  if (policy.kind === "default") return { kind: "default", options: policy.options };
  return {
    kind: "custom",
    name: policy.name,
    options: (policy.options ?? {}) as Record<string, JsonValue>,
    extends: describeContext(policy.extends),
    hasBuild: typeof policy.build === "function",
  };
}

export type { AgentDefinition };
