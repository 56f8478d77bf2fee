import { existsSync, statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { closest } from "fastest-levenshtein";
import {
  AssemblyLineError,
  routedPath,
  BUILT_IN_TOOL_NAMES,
  GATEWAY_SLOTS,
  isAdapterDescriptor,
  isAgentDefinition,
  isChannelDefinition,
  isGatewayDefinition,
  isSandboxDefinition,
  isAutomationDefinition,
  isConnectionDefinition,
  type ChannelDefinition,
  isApprovalPolicy,
  isContextPolicy,
  isDisabledTool,
  isHookDefinition,
  isReservedEventType,
  RESERVED_EVENT_NAMESPACES,
  RUN_EVENT_TYPES,
  isRunResolverDefinition,
  isToolDefinition,
  resolveDefaultContextOptions,
  type AgentDefinition,
  type AutomationDefinition,
  type ContextPolicy,
  type JsonValue,
  type ToolDefinition,
} from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import { checkBudgets } from "../run/budget.js";
import { snapshotRevision } from "./revisions.js";
import { approvalProblem } from "../run/approval-problem.js";
import { capabilityProblem, listedSkillToolProblem } from "../run/tool-visibility.js";
import { toolFunctionProblem } from "./tool-functions.js";
import { compileSchema } from "../schema.js";
import { findNonJson, jsonWithoutUndefinedKeys } from "../json-check.js";
import { createModuleLoader } from "./load-module.js";
import { refuseUnsupportedOptions, sandboxUse } from "./unsupported-options.js";
import { KNOWN_KEYS, refuseUnknownKeys } from "./known-keys.js";
import { grantBindingsProblem } from "../connections/grant-bindings.js";
import { checkToolPolicy } from "../run/tool-policy.js";
import {
  MANIFEST_VERSION,
  type AgentManifest,
  type AutomationManifestEntry,
  type ConnectionManifestEntry,
  type ContextManifest,
  type ChannelManifestEntry,
  type GatewayManifest,
  type SandboxManifest,
  type HookManifestEntry,
  type InstrumentationManifest,
  type SourceRef,
  type ToolManifestEntry,
} from "./manifest.js";
import { hashSource, listBehaviourFiles } from "./source-files.js";
import { listImportedFiles } from "./imported-files.js";
import { refuseNestedDefinitions, refuseUnreadDefinitions } from "./nested-definitions.js";
import { findSource, listSourceDir, stemOf } from "./folder-files.js";
import { checkToolName } from "./tool-names.js";
import { checkAgentFieldTypes } from "./agent-fields.js";
import { resolveInstructions } from "./instructions.js";
import { compileSkills } from "./skills.js";
import { removedSlots } from "./removed-slots.js";
import { SUBAGENT_ONLY_KEYS, compileSubagents } from "./subagents.js";
import { normalizeSchedule } from "../automations/schedule-time.js";
import { checkInstrumentation } from "../telemetry/instrumentation.js";

export const ARTIFACT_DIR = ".assembly-line";
export const MANIFEST_FILE = "manifest.json";
/** What each module imports, as last read: a build of unchanged modules does not parse them again. */
const IMPORTS_CACHE_FILE = "imports.json";

export interface BuildOptions {
  /** Check a static model spec (e.g. the engine's catalog); throw to fail the build. */
  validateModel?(modelSpec: string): void | Promise<void>;
  /**
   * Check that the plugin behind sandbox.ts's adapter is installed (hosts resolve
   * it like a gateway.ts slot); throw, naming the package to install, to fail the build.
   */
  checkSandboxAdapter?(adapter: string, agentDir: string): void | Promise<void>;
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
  refuseUnknownKeys(agent, KNOWN_KEYS.agent, agentFile, "AL_ERR_AGENT_DEFINITION");
  checkAgentFieldTypes(agent, agentFile, "AL_ERR_AGENT_DEFINITION", { root: true });
  const model = agent.model as string;
  await options.validateModel?.(model);
  checkBudgets(agent.budgets, `${agentFile} budgets`);
  const sandboxFile = findSource(agentDir, "sandbox");
  refuseUnsupportedOptions({
    agentDir,
    agentFile,
    agent,
    sandbox: sandboxUse(sandboxFile, sandboxFile ? (await load(join(agentDir, sandboxFile))).default : undefined),
    rootFile: (stem) => findSource(agentDir, stem),
  });
  for (const key of SUBAGENT_ONLY_KEYS) {
    if (agent[key] !== undefined) {
      throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile} sets ${key}, which only a subagent (subagents/<name>/agent.ts) may set`, {
        fix: key === "tools" ? "List up-front tools with defaultTools; tools: [...] is how a subagent names parent tools." : `Remove ${key} from the root agent.`,
      });
    }
  }
  const selfImprovement = checkSelfImprovement(agent.selfImprovement, agentFile);
  const { instructions, instructionsSource } = await resolveInstructions(agentDir, "", agentFile, agent);

  const tools = await compileTools(agentDir, load);
  refuseListedSkillTools(agent.defaultTools, tools, agentFile);
  const ownTools = new Set(tools.filter((entry) => entry.kind !== "disabled").map((entry) => entry.name));
  const removed = removedSlots(tools);
  const skills = await compileSkills(agentDir, "", new Set([...ownTools, ...BUILT_IN_TOOL_NAMES.filter((name) => !removed.has(name))]), removed);
  const subagents = await compileSubagents(
    { rootDir: agentDir, load, compileTools: (prefix) => compileTools(agentDir, load, prefix) },
    { prefix: "", model, tools: ownTools, connections: new Set((await listSourceDir(agentDir, "connections", "connection")).map(stemOf)), budgets: agent.budgets, removedSlots: removed },
  );
  const hooks = await compileHooks(agentDir, load);
  const resolver = await compileResolver(agentDir, load);
  const contextSource = await compileContextFile(agentDir, load);
  const gateway = await compileGateway(agentDir, load);
  const channels = await compileChannels(agentDir, load);
  const sandbox = await compileSandbox(agentDir, load);
  const automations = await compileAutomations(agentDir, load);
  const connections = await compileConnections(agentDir, load);
  const dynamicAutomations = checkDynamicAutomations(agent, agentFile);
  const dynamicConnections = checkDynamicConnections(agent, agentFile);
  const instrumentation = await compileInstrumentation(agentDir, load);
  if (sandbox && sandbox.adapter !== "local") await options.checkSandboxAdapter?.(sandbox.adapter, agentDir);
  const agentContext = agent.context === undefined ? undefined : agent.context;
  if (agentContext !== undefined && !isContextPolicy(agentContext)) {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `${agentFile} context: is not a context policy`, {
      fix: "Use defaultContext({...}) or a defineContext({...}) exported from context.ts.",
    });
  }
  // context.ts is used only through agent.ts's context: (as the policy or one it extends); one nothing uses would read as applied.
  if (contextSource && !policyChain(agentContext).some((policy) => contextSource.exports.some((exported) => sameContextPolicy(exported, policy)))) {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `context.ts exports a context policy that ${agentFile} does not use, so runs would not apply it`, {
      fix: `Import it in ${agentFile} and set context: to it (e.g. import { customContext } from "./context"; ... context: customContext), or remove context.ts.`,
    });
  }
  // Code anywhere in the folder, plus what the loaded modules import from it (data such as ./table.json).
  const artifactRoot = join(agentDir, ARTIFACT_DIR);
  const imported = await listImportedFiles(agentDir, load.loaded, join(artifactRoot, IMPORTS_CACHE_FILE));
  const behaviourFiles = await listBehaviourFiles(agentDir);
  await refuseNestedDefinitions(agentDir, load, behaviourFiles, imported);
  await refuseUnreadDefinitions(agentDir, behaviourFiles, imported, load.loaded);
  const hashed = new Set([...behaviourFiles, ...imported]);
  const sources = await Promise.all([...hashed].sort().map((file) => hashSource(agentDir, file)));

  const body: Omit<AgentManifest, "agentRevision"> = {
    manifestVersion: MANIFEST_VERSION,
    sourceRoot: relative(artifactRoot, agentDir) || ".",
    agent: {
      id: agent.id ?? basename(agentDir),
      name: agent.name ?? agent.id ?? basename(agentDir),
      description: agent.description ?? null,
      model,
      instructions,
      defaultTools: agent.defaultTools ?? null,
      coreToolPolicy: checkToolPolicy(agent.coreToolPolicy, `${agentFile} coreToolPolicy`),
      ...(agent.budgets !== undefined ? { budgets: agent.budgets } : {}),
      context: describeContext(agentContext, agentContext === undefined ? null : (contextSource?.exports.some((exported) => sameContextPolicy(exported, agentContext)) ? contextSource.source : await hashSource(agentDir, agentFile))),
      dynamicAutomations,
      dynamicConnections,
      source: await hashSource(agentDir, agentFile),
      instructionsSource,
      selfImprovement,
    },
    tools,
    hooks,
    resolver,
    context: contextSource?.source ?? null,
    gateway,
    channels,
    sandbox,
    skills,
    subagents,
    automations,
    connections,
    instrumentation,
    sources,
  };
  // sourceRoot is a local layout detail, not behaviour: leave it out of the revision.
  const { sourceRoot: _layout, ...revisionInput } = body;
  const manifest: AgentManifest = { ...body, agentRevision: `rev_${digestJson(revisionInput).slice(0, 32)}` };

  await mkdir(artifactRoot, { recursive: true });
  await writeFile(join(artifactRoot, ".gitignore"), "*\n");
  // The revision copy first: a build that fails writing it leaves the previous manifest in place,
  // never a current manifest whose revision a paused run could not be resumed on.
  await snapshotRevision(agentDir, artifactRoot, manifest);
  const manifestPath = join(artifactRoot, MANIFEST_FILE);
  await writeAtomically(manifestPath, JSON.stringify(manifest, null, 2) + "\n");
  return { manifest, manifestPath, artifactRoot };
}

function checkSelfImprovement(value: unknown, agentFile: string): { writable: boolean; writeApproval: boolean } {
  if (value === undefined) return { writable: false, writeApproval: false };
  const policy = value as Record<string, unknown>;
  const bad = typeof value !== "object" || value === null || Object.keys(policy).some((key) => key !== "writable" && key !== "writeApproval") || ["writable", "writeApproval"].some((key) => policy[key] !== undefined && typeof policy[key] !== "boolean");
  if (bad) {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile}: selfImprovement must be { writable?: boolean, writeApproval?: boolean }`, {
      fix: "Write selfImprovement: { writable: true, writeApproval: false }.",
    });
  }
  // Approval of skill writes an agent cannot make would read as a safeguard that guards nothing.
  if (policy.writeApproval === true && policy.writable !== true) {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile}: selfImprovement.writeApproval is true but writable is not: the agent cannot write skills, so there is nothing to approve`, {
      fix: "Write selfImprovement: { writable: true, writeApproval: true } to let the agent change its skills with approval, or leave writeApproval out.",
    });
  }
  return { writable: policy.writable === true, writeApproval: policy.writeApproval === true };
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

type Loader = ReturnType<typeof createModuleLoader>;

/** Compile `<prefix>tools/` (prefix: "" for the root, `subagents/<name>/` for a subagent); files are named from `agentDir`. */
async function compileTools(agentDir: string, load: Loader, prefix = ""): Promise<ToolManifestEntry[]> {
  const entries: ToolManifestEntry[] = [];
  const builtIns = new Set<string>(BUILT_IN_TOOL_NAMES);
  for (const file of await listSourceDir(agentDir, `${prefix}tools`, "tool")) {
    const name = stemOf(file);
    checkToolName(file, name);
    const module = await load(join(agentDir, file));
    const exported = module.default;
    const source = await hashSource(agentDir, file);
    // One tool per file: a second one exported by name would never be offered to the model.
    const named = Object.keys(module).filter((key) => key !== "default" && (isToolDefinition(module[key]) || isDisabledTool(module[key])));
    if (named.length > 0 && (isToolDefinition(exported) || isDisabledTool(exported))) {
      throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${file} also exports a tool as ${named.map((key) => `"${key}"`).join(", ")}, which would never be offered (one tool per file)`, {
        fix: `Move it to its own file, e.g. ${dirname(file)}/${named[0]}.ts with \`export default\`, or stop exporting it.`,
      });
    }
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
        fix: named.length > 0
          ? `It exports the tool as "${named[0]}": write \`export default ${named[0]}\` (the file name, not the export's, names the tool).`
          : "Write `export default defineTool({ description, inputSchema, execute })`.",
      });
    }
    refuseUnknownKeys(exported, KNOWN_KEYS.tool, `${file}: defineTool`, "AL_ERR_TOOL_DEFINITION");
    entries.push(toolEntry(file, name, exported, source, builtIns.has(name) ? "override" : "authored"));
  }
  // An alias is another name for one tool: it may not shadow a tool or another alias.
  const taken = new Map<string, string>([...builtIns, ...entries.map((entry) => entry.name)].map((name) => [name, `tool ${name}`]));
  for (const entry of entries) {
    for (const alias of entry.capability?.aliases ?? []) {
      const holder = taken.get(alias);
      if (holder && holder !== `tool ${entry.name}`) {
        throw new AssemblyLineError("AL_ERR_TOOL_CAPABILITY", `${entry.source.file}: alias "${alias}" is already the name or an alias of ${holder}`, {
          fix: "Give each alias to one tool only, and never a tool's own name.",
        });
      }
      taken.set(alias, `tool ${entry.name}`);
    }
  }
  return entries;
}

/**
 * agent.ts defaultTools naming one of the agent's own skill-only tools: refused at
 * build (the runtime refuses it too when it starts, for plugin-provided tools).
 */
function refuseListedSkillTools(defaultTools: string[] | undefined, tools: ToolManifestEntry[], agentFile: string): void {
  const listed = new Set(defaultTools ?? []);
  const skillOnly = tools.filter((entry) => entry.kind !== "disabled" && entry.capability?.visibility === "skill" && listed.has(entry.name));
  if (skillOnly.length === 0) return;
  throw new AssemblyLineError("AL_ERR_DEFAULT_TOOL_UNKNOWN", `${agentFile} defaultTools: ${skillOnly.map((entry) => listedSkillToolProblem(entry.name)).join("; ")}`, {
    fix: `A skill-only tool is offered once a skill that names it in its SKILL.md tools: [...] is loaded: take it out of defaultTools, or remove visibility: "skill" from ${skillOnly.map((entry) => entry.source.file).join(", ")} to offer it up front.`,
  });
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
  // Else a call would fail at run time, and a toModelOutput that is no function would be called all the same.
  const functionProblem = toolFunctionProblem(tool);
  if (functionProblem) {
    throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${file}: ${functionProblem}`, {
      fix: "Write execute as a function, `async execute(input, ctx) { ... }`, and toModelOutput, when given, as a synchronous `toModelOutput(output) { return ...; }` (no async).",
    });
  }
  for (const field of ["inputSchema", "outputSchema"] as const) {
    const schema = tool[field];
    if (schema === undefined) continue;
    // The manifest records the schema as JSON and the revision covers that copy: it must be the one that runs.
    const notJson = findNonJson(schema, field);
    if (notJson !== undefined) {
      throw new AssemblyLineError("AL_ERR_TOOL_SCHEMA", `${file}: ${notJson}`, {
        fix: `Write the ${field} of tool "${name}" as plain JSON data (strings, numbers, booleans, null, arrays, objects).`,
      });
    }
    // Model APIs take a tool's arguments as one JSON object; any other root is refused by the provider at run time.
    if (field === "inputSchema" && (typeof schema !== "object" || schema === null || (schema as { type?: unknown }).type !== "object")) {
      throw new AssemblyLineError("AL_ERR_TOOL_SCHEMA", `${file}: inputSchema must be an object schema (type: "object"), the arguments the model passes`, {
        fix: `Write inputSchema: { type: "object", properties: { ... }, required: [...] }; wrap a single value as one property.`,
      });
    }
    try {
      compileSchema(schema);
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_TOOL_SCHEMA", `${file}: ${field} is not a valid JSON Schema: ${(error as Error).message}`, {
        fix: `Correct the ${field} of tool "${name}" (ajv must compile it).`,
      });
    }
  }
  const capabilityIssue = capabilityProblem(tool);
  if (capabilityIssue) {
    throw new AssemblyLineError("AL_ERR_TOOL_CAPABILITY", `${file}: ${capabilityIssue}`, {
      fix: 'See "Tool discovery" in the README: visibility auto|always|deferred|skill|hidden, execution auto|direct|sandbox|both, lowercase namespace, tags and aliases.',
    });
  }
  const approvalIssue = approvalProblem(tool);
  if (approvalIssue) {
    throw new AssemblyLineError("AL_ERR_TOOL_DEFINITION", `${file}: ${approvalIssue}`, {
      fix: 'Gate the tool with needsApproval: true or needsApproval: approvalRequired("why", "external"), and give sideEffect as "none", "idempotent" or "external".',
    });
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
  for (const file of await listSourceDir(agentDir, "hooks", "hook")) {
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
    // A type in the runtime's namespaces that it never records ("run.complete") is a typo: ctx.emit
    // refuses those namespaces too, so such a handler could never fire.
    const neverRecorded = Object.keys(hook.events).filter((type) => isReservedEventType(type) && !(RUN_EVENT_TYPES as readonly string[]).includes(type));
    if (neverRecorded.length > 0) {
      const [type] = neverRecorded as [string];
      const namespace = type.split(".")[0]!;
      const siblings = RUN_EVENT_TYPES.filter((known) => known.startsWith(`${namespace}.`));
      const recordedInstead = RECORDED_INSTEAD[type];
      throw new AssemblyLineError("AL_ERR_HOOK_DEFINITION", `${file}: no event of type ${neverRecorded.map((each) => `"${each}"`).join(", ")} is ever recorded, so its handler would never run`, {
        fix: `${recordedInstead ? `${recordedInstead}. ` : ""}Key the handler by an event type the runtime records${siblings.length > 0 ? ` (in "${namespace}.": ${siblings.join(", ")})` : ""}, or by "*". Custom types from ctx.emit are outside the runtime's namespaces (${RESERVED_EVENT_NAMESPACES.join(", ")}).`,
        details: { file, types: neverRecorded },
      });
    }
    entries.push({ source: await hashSource(agentDir, file), events: Object.keys(hook.events).sort() });
  }
  return entries;
}

/** Event types a hook author may reasonably expect, and the recorded event that carries the same moment. */
const RECORDED_INSTEAD: Record<string, string> = {
  "tool.denied": 'A denied tool call is recorded as "approval.denied" (its data: approvalId, callId, toolName, actor, reason)',
};

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

/** instrumentation.ts: checked here, its setup() runs at each startup (loadRuntimeBundle), not at build. */
async function compileInstrumentation(agentDir: string, load: Loader): Promise<InstrumentationManifest | null> {
  const file = findSource(agentDir, "instrumentation");
  if (!file) return null;
  const definition = (await load(join(agentDir, file))).default;
  checkInstrumentation(definition, file);
  return { source: await hashSource(agentDir, file), captureContent: definition.captureContent ?? "usage", serviceName: definition.serviceName ?? null };
}

async function compileContextFile(agentDir: string, load: Loader): Promise<{ source: SourceRef; exports: unknown[] } | null> {
  const file = findSource(agentDir, "context");
  if (!file) return null;
  const exports = Object.values(await load(join(agentDir, file)));
  if (!exports.some(isContextPolicy)) {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `${file} exports no context policy`, {
      fix: "Export a defineContext({...}) (or defaultContext({...})) and use it as context: in agent.ts.",
    });
  }
  return { source: await hashSource(agentDir, file), exports };
}

async function compileChannels(agentDir: string, load: Loader): Promise<ChannelManifestEntry[]> {
  const entries: ChannelManifestEntry[] = [];
  /** The channel file and route as written, by routed path. */
  const routes = new Map<string, { file: string; route: string }>();
  for (const file of await listSourceDir(agentDir, "channels", "channel")) {
    const name = stemOf(file);
    const module = await load(join(agentDir, file));
    const config = module.default;
    const fail = (problem: string, fix: string): never => {
      throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `${file}: ${problem}`, { fix });
    };
    if (!isChannelDefinition(config)) fail("does not default-export defineChannel(...) or a provider helper", 'Write `export default defineChannel({ transport: "http", route: "/message", methods: ["POST"] })`.');
    const channel = config as ChannelDefinition;
    refuseStrayChannelExports(file, module);
    refuseUnknownKeys(channel, KNOWN_KEYS.channel, `${file}: defineChannel`, "AL_ERR_CHANNEL_DEFINITION");
    refuseUnknownKeys(channel.ingress, KNOWN_KEYS.channelIngress, `${file}: defineChannel ingress`, "AL_ERR_CHANNEL_DEFINITION");
    if (channel.transport !== "http") fail(`transport ${JSON.stringify(channel.transport)} is not supported`, 'Use transport: "http".');
    if (typeof channel.route !== "string" || !channel.route.startsWith("/")) fail(`route ${JSON.stringify(channel.route)} must start with /`, 'Use a path such as "/message".');
    const methods = channel.methods ?? ["POST"];
    // An empty list builds a route no request reaches; a bare string is a list's one item left unwrapped.
    if (!Array.isArray(methods) || methods.length === 0) fail(`methods ${JSON.stringify(methods)} is not a non-empty list of HTTP methods`, 'Write methods: ["POST"] (or leave it out: POST is the default).');
    const badMethod = methods.find((method) => !["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method));
    if (badMethod) fail(`method ${JSON.stringify(badMethod)} is not an HTTP method this host routes`, "Use GET, POST, PUT, PATCH or DELETE.");
    const exported = (key: "normalizeHttp" | "deliver" | "resolveAttachment" | "deliverFailure") =>
      typeof module[key] === "function" || typeof (channel as unknown as Record<string, unknown>)[key] === "function";
    // Without normalizeHttp every request is read as a JSON message body, which a GET or DELETE does not carry:
    // such a route would build and then answer every request 415.
    const bodiless = exported("normalizeHttp") ? undefined : methods.find((method) => method === "GET" || method === "DELETE");
    if (bodiless) {
      fail(
        `method ${bodiless} on a channel without normalizeHttp: the default message fallback reads a JSON body ({ "message": ... }), which a ${bodiless} request does not carry`,
        `Export normalizeHttp(request) to take ${bodiless} requests (it receives their query), or declare methods: ["POST"].`,
      );
    }
    const groups = channel.ingress?.requiredSecretEnv ?? [];
    if (!Array.isArray(groups) || groups.some((group) => !Array.isArray(group) || group.length === 0 || group.some((name) => typeof name !== "string" || !/^[A-Z_][A-Z0-9_]*$/.test(name)))) {
      fail("ingress.requiredSecretEnv must be any-of groups of env variable names", 'Write ingress: { requiredSecretEnv: [["MY_WEBHOOK_SECRET"]] }.');
    }
    // Compared as the host routes them: "/message/" and "/message" are one path.
    const routed = routedPath(channel.route);
    const taken = routes.get(routed);
    if (taken) {
      const spelt = (route: string) => (route === routed ? route : `${route} (routed as ${routed})`);
      fail(`route ${spelt(channel.route)} is also served by ${taken.file}${taken.route === channel.route ? "" : ` as ${spelt(taken.route)}`}`, "Give each channel its own route: paths that differ only in their slashes are one route.");
    }
    routes.set(routed, { file, route: channel.route });
    entries.push({
      name,
      source: await hashSource(agentDir, file),
      transport: "http",
      route: channel.route,
      methods,
      requiredSecretEnv: groups,
      exports: {
        normalizeHttp: exported("normalizeHttp"),
        deliver: exported("deliver"),
        resolveAttachment: exported("resolveAttachment"),
        ...(exported("deliverFailure") ? { deliverFailure: true as const } : {}),
      },
    });
  }
  return entries;
}

/** The named exports of a `channels/*.ts` file the host reads: the members of a ChannelModule besides its config (the default export). */
const CHANNEL_EXPORTS = ["normalizeHttp", "deliver", "deliverFailure", "resolveAttachment"] as const;

/**
 * Refuse a named export of a channel file that the host would never read: a misspelt one builds otherwise
 * without a word, and `normaliseHttp` would turn a provider channel into a raw route with no signature check.
 */
function refuseStrayChannelExports(file: string, module: Record<string, unknown>): void {
  for (const key of Object.keys(module)) {
    if (key === "default") continue;
    if ((CHANNEL_EXPORTS as readonly string[]).includes(key)) {
      if (typeof module[key] === "function") continue;
      throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `${file}: export ${key} is not a function`, {
        fix: `Export ${key} as a function (export async function ${key}(...)), or leave it out.`,
      });
    }
    const closest = closestName(key, CHANNEL_EXPORTS);
    throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `${file}: export ${key} is not one a channel module has (the host reads only ${CHANNEL_EXPORTS.join(", ")} and the default export), so it would never be called`, {
      fix: `Rename it to ${closest} if that is what it is, or stop exporting it (a helper the channel uses needs no export; one shared with other files goes in a file outside channels/).`,
    });
  }
}

/** The candidate with the fewest single-letter edits (case aside) from `name`, the first of equals. */
function closestName(name: string, candidates: readonly string[]): string {
  const lowered = candidates.map((candidate) => candidate.toLowerCase());
  return candidates[lowered.indexOf(closest(name.toLowerCase(), lowered))]!;
}

const AUTOMATION_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

async function compileAutomations(agentDir: string, load: Loader): Promise<AutomationManifestEntry[]> {
  const entries: AutomationManifestEntry[] = [];
  for (const file of await listSourceDir(agentDir, "automations", "automation")) {
    const name = stemOf(file);
    const fail = (problem: string, fix: string): never => {
      throw new AssemblyLineError("AL_ERR_AUTOMATION_DEFINITION", `${file}: ${problem}`, { fix });
    };
    if (!AUTOMATION_NAME.test(name)) fail(`automation name "${name}" is not 1-64 lowercase letters, digits, _ or -`, "Rename the file, e.g. automations/daily_report.ts.");
    const exported = (await load(join(agentDir, file))).default;
    if (!isAutomationDefinition(exported)) fail("does not default-export defineAutomation(...)", 'Write `export default defineAutomation({ schedule: "0 9 * * *", message: "..." })`.');
    const automation = exported as AutomationDefinition;
    const { schedule, message, conversationId, enabled } = automation;
    refuseUnknownKeys(automation, KNOWN_KEYS.automation, `${file}: defineAutomation`, "AL_ERR_AUTOMATION_DEFINITION");
    if (typeof message !== "string" || message.trim() === "") fail("message must be a non-empty string", "Say what each run should do.");
    if (conversationId !== undefined && (typeof conversationId !== "string" || conversationId === "")) fail("conversationId must be a non-empty string", "Omit it for standalone runs.");
    if (enabled !== undefined && typeof enabled !== "boolean") fail("enabled must be a boolean", "Pass true or false, or omit it (true).");
    let normalized;
    try {
      normalized = normalizeSchedule(schedule, file);
    } catch (error) {
      // Same code as the rest of this file's problems: the build names the file and the fix.
      throw new AssemblyLineError("AL_ERR_AUTOMATION_DEFINITION", (error as Error).message.replace(/^AL_ERR_\w+: /, ""), { cause: error });
    }
    entries.push({ name, source: await hashSource(agentDir, file), schedule: normalized, message, conversationId: conversationId ?? null, enabled: enabled ?? true });
  }
  return entries;
}

const CONNECTION_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

async function compileConnections(agentDir: string, load: Loader): Promise<ConnectionManifestEntry[]> {
  const entries: ConnectionManifestEntry[] = [];
  for (const file of await listSourceDir(agentDir, "connections", "connection")) {
    const name = stemOf(file);
    const fail = (problem: string, fix: string): never => {
      throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", `${file}: ${problem}`, { fix });
    };
    if (!CONNECTION_NAME.test(name)) fail(`connection name "${name}" is not snake_case`, "Rename the file, e.g. connections/weather_api.ts; its tools are <name>__<tool>.");
    const exported: unknown = (await load(join(agentDir, file))).default;
    if (!isConnectionDefinition(exported)) fail("does not default-export defineMcpConnection / defineOpenApiConnection / defineHttpConnection", 'Write `export default defineMcpConnection({ url: "https://mcp.example.com/mcp", description: "..." })`.');
    const connection = exported as { kind: "mcp" | "openapi" | "http"; description?: unknown; auth?: { grant?: unknown } };
    refuseUnknownKeys(connection, KNOWN_KEYS[`${connection.kind}Connection`], `${file}: the connection`, "AL_ERR_CONNECTION_DEFINITION");
    if (typeof connection.description !== "string" || connection.description.trim() === "") fail("description is required", "Say what the service offers; tool_search shows it.");
    if (connection.auth !== undefined && (typeof connection.auth?.grant !== "string" || Object.keys(connection.auth).some((key) => key !== "grant" && key !== "header"))) {
      fail("auth must be { grant: \"<grant id>\", header? }", "Refer to a grant in the host's grant store; secrets never go in the agent folder.");
    }
    entries.push({ name, source: await hashSource(agentDir, file), kind: connection.kind, description: connection.description as string, grant: (connection.auth?.grant as string | undefined) ?? null });
  }
  return entries;
}

function checkDynamicAutomations(agent: AgentDefinition, agentFile: string): AgentManifest["agent"]["dynamicAutomations"] {
  const policy = agent.dynamicAutomations ?? {};
  refuseUnknownKeys(policy, KNOWN_KEYS.dynamicAutomations, `${agentFile}: dynamicAutomations`, "AL_ERR_AGENT_DEFINITION");
  for (const key of ["dynamic", "approval"] as const) {
    if (policy[key] !== undefined && typeof policy[key] !== "boolean") {
      throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile}: dynamicAutomations.${key} must be a boolean`, { fix: "Write dynamicAutomations: { dynamic: true, approval: false }." });
    }
  }
  return { dynamic: policy.dynamic === true, approval: policy.approval === true };
}

function checkDynamicConnections(agent: AgentDefinition, agentFile: string): AgentManifest["agent"]["dynamicConnections"] {
  const policy = agent.dynamicConnections ?? {};
  refuseUnknownKeys(policy, KNOWN_KEYS.dynamicConnections, `${agentFile}: dynamicConnections`, "AL_ERR_AGENT_DEFINITION");
  const fail = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile}: dynamicConnections.${problem}`, {
      fix: 'Write dynamicConnections: { dynamic: true, approval: true, allowedHosts: ["mcp.example.com"] }.',
    });
  };
  for (const key of ["dynamic", "approval"] as const) if (policy[key] !== undefined && typeof policy[key] !== "boolean") fail(`${key} must be a boolean`);
  const hosts = policy.allowedHosts ?? [];
  if (!Array.isArray(hosts) || hosts.some((host) => typeof host !== "string" || host.trim() === "" || /[/:\s]/.test(host.replace(/^\[.*\]$/, "")))) {
    fail("allowedHosts must be a list of host names (no scheme, port or path)");
  }
  const allowedHosts = hosts.map((host) => host.toLowerCase());
  let grants: Record<string, string[]> | undefined;
  if (policy.grants !== undefined) {
    const wrong = grantBindingsProblem(policy.grants, allowedHosts);
    if (wrong) throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `${agentFile}: dynamicConnections.${wrong.problem}`, { fix: wrong.fix });
    grants = Object.fromEntries(Object.entries(policy.grants).map(([grant, bound]) => [grant, bound.map((host) => host.toLowerCase())]));
  }
  // Approval stays on unless the agent turns it off: connections reach the outside world.
  // `grants` only when given, so the manifest (and agentRevision) of an agent without it is unchanged.
  return { dynamic: policy.dynamic === true, approval: policy.approval !== false, allowedHosts, ...(grants ? { grants } : {}) };
}

async function compileSandbox(agentDir: string, load: Loader): Promise<SandboxManifest | null> {
  const file = findSource(agentDir, "sandbox");
  if (!file) return null;
  const declared = sandboxOptions((await load(join(agentDir, file))).default);
  if (!declared) {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `${file} does not default-export defineSandbox({ adapter, ... }) or a sandbox helper such as dockerSandbox({...})`, {
      fix: 'Write `export default defineSandbox({ adapter: "local" })`, or `defineSandbox({ adapter: "docker", image: "node:22" })` to run commands in an image.',
    });
  }
  const { adapter, options } = declared;
  const workingDirectory = options.workingDirectory;
  if (workingDirectory !== undefined && workingDirectory !== "/workspace") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `${file}: workingDirectory ${JSON.stringify(workingDirectory)} is not allowed`, {
      fix: "Omit workingDirectory or set it to /workspace: hosted shell commands see a real, physical /workspace, so other aliases are invalid (/runtime is retired).",
    });
  }
  // The manifest records the options as JSON and the adapter is made from that record: a value JSON
  // would turn into null or drop (Infinity, a function) must be refused here, not reach the adapter as
  // its default. A key set to undefined is left out, as an option not given.
  const checked = jsonWithoutUndefinedKeys(options, "options");
  if ("problem" in checked) {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `${file}: sandbox ${checked.problem}`, {
      fix: `Give every sandbox option in ${file} as plain JSON data (strings, finite numbers, booleans, null, arrays, plain objects): the build records the options as JSON and the ${adapter} adapter is made from that record. Leave an option out to take the adapter's default.`,
    });
  }
  const json = checked.json;
  const image = typeof options.image === "string" ? options.image : null;
  return { source: await hashSource(agentDir, file), adapter, image, workingDirectory: "/workspace", options: json as Record<string, JsonValue> };
}

/**
 * sandbox.ts exports either defineSandbox({ adapter, ... }) or a plugin helper's
 * sandbox descriptor (dockerSandbox({...})): both name an adapter and its options.
 */
export function sandboxOptions(value: unknown): { adapter: string; options: Record<string, unknown> } | undefined {
  if (isSandboxDefinition(value) && typeof value.adapter === "string" && value.adapter !== "") {
    const { $$type: _type, $$version: _version, adapter, ...options } = value as unknown as Record<string, unknown> & { adapter: string };
    return { adapter, options };
  }
  if (isAdapterDescriptor(value) && value.slot === "sandbox" && typeof value.plugin === "string") {
    return { adapter: value.plugin, options: { ...((value.options ?? {}) as Record<string, unknown>) } };
  }
  return undefined;
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

/** A context policy and those it extends, outermost first; none without a policy. */
function policyChain(policy: ContextPolicy | undefined): ContextPolicy[] {
  const chain: ContextPolicy[] = [];
  for (let level = policy; level !== undefined; level = level.kind === "custom" ? level.extends : undefined) chain.push(level);
  return chain;
}

/** Whether context.ts exports this policy (agent.ts may see its own module instance of context.ts). */
function sameContextPolicy(exported: unknown, policy: ContextPolicy): boolean {
  if (exported === policy) return true;
  if (!isContextPolicy(exported) || exported.kind !== policy.kind) return false;
  return exported.kind === "custom" ? exported.name === (policy as { name: string }).name : digestJson(exported.options as JsonValue) === digestJson(policy.options as JsonValue);
}

/**
 * The context policy as the manifest records it: each level with the file that
 * defines it (null for the implicit default) and, for the default policy, every
 * part's effective bounds.
 */
function describeContext(policy: ContextPolicy | undefined, source: SourceRef | null): ContextManifest {
  if (policy === undefined) return { kind: "default", options: {}, resolved: resolveDefaultContextOptions({}), source: null };
  if (policy.kind === "default") return { kind: "default", options: policy.options, resolved: resolveDefaultContextOptions(policy.options), source };
  return {
    kind: "custom",
    name: policy.name,
    options: (policy.options ?? {}) as Record<string, JsonValue>,
    extends: describeContext(policy.extends, source),
    hasBuild: typeof policy.build === "function",
    source,
  };
}

export type { AgentDefinition };
