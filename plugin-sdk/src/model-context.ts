import { brand, hasBrand, type Branded } from "./brand.js";
import { AssemblyLineError } from "./errors.js";
import type { JsonValue } from "./json.js";
import type { ModelMessage, ModelToolSpec } from "./model.js";

/**
 * The default context's parts, each bounded and configurable. Parts marked
 * untrusted (the event's metadata, channel metadata, memory paths, file and attachment names)
 * are fenced as `<untrusted source="...">` in the prompt.
 */
export interface DefaultContextOptions {
  /** Trusted instructions (agent.ts plus a resolver's). Default maxChars 20000. */
  instructions?: { maxChars?: number };
  /** The active event: the message that started the run (maxChars 32000) and its metadata (metadataMaxChars 2000). */
  event?: { maxChars?: number; includeMetadata?: boolean; metadataMaxChars?: number };
  /** Bounded recent history: at most maxMessages (20) prior messages, each cut at maxCharsPerMessage (4000). */
  recentHistory?: { maxMessages?: number; maxCharsPerMessage?: number };
  /** Memory shape: which files /memory holds and their sizes, never their content. At most maxEntries (50). */
  memory?: { include?: boolean; maxEntries?: number };
  /** The /files manifest (paths and sizes). Default includeManifest true, maxEntries 50. */
  files?: { includeManifest?: boolean; maxEntries?: number };
  /** This run's attachments under /files/attachments/<runId>/. At most maxItems (20). */
  attachments?: { include?: boolean; maxItems?: number };
  /** Compact skill catalog: each skill's name and one-line description. At most maxEntries (30). */
  skills?: { include?: boolean; maxEntries?: number };
  /** Compact capability catalog: the deferred tools tool_search can find, by namespace. At most maxEntries (20) namespaces. */
  capabilities?: { include?: boolean; maxEntries?: number };
  /** One-line summaries of the tools offered up front. At most maxEntries (50). */
  tools?: { include?: boolean; maxEntries?: number };
  /** The channel the run came from, with its metadata. Cut at maxChars (2000). */
  channel?: { include?: boolean; maxChars?: number };
  /** The statement of what is trusted and what is data. */
  trustBoundaries?: { include?: boolean };
}

/** The part names of `defaultContext()`, in prompt order. */
export const DEFAULT_CONTEXT_PARTS = [
  "instructions",
  "event",
  "recentHistory",
  "memory",
  "files",
  "attachments",
  "skills",
  "capabilities",
  "tools",
  "channel",
  "trustBoundaries",
] as const;

export type DefaultContextPart = (typeof DEFAULT_CONTEXT_PARTS)[number];

/** Every part with its defaults filled in: what a run's default context is built with. */
export type ResolvedDefaultContextOptions = { [Part in DefaultContextPart]-?: Required<NonNullable<DefaultContextOptions[Part]>> };

export const DEFAULT_CONTEXT_DEFAULTS: ResolvedDefaultContextOptions = Object.freeze({
  instructions: { maxChars: 20_000 },
  event: { maxChars: 32_000, includeMetadata: true, metadataMaxChars: 2_000 },
  recentHistory: { maxMessages: 20, maxCharsPerMessage: 4_000 },
  memory: { include: true, maxEntries: 50 },
  files: { includeManifest: true, maxEntries: 50 },
  attachments: { include: true, maxItems: 20 },
  skills: { include: true, maxEntries: 30 },
  capabilities: { include: true, maxEntries: 20 },
  tools: { include: true, maxEntries: 50 },
  channel: { include: true, maxChars: 2_000 },
  trustBoundaries: { include: true },
});

/** Check options against the parts and their bounds, and fill in the defaults. */
export function resolveDefaultContextOptions(options: DefaultContextOptions = {}): ResolvedDefaultContextOptions {
  const fail = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `defaultContext: ${problem}`, {
      fix: `Configure only the parts ${DEFAULT_CONTEXT_PARTS.join(", ")}, with non-negative integer bounds and boolean switches (see the README's "Context").`,
    });
  };
  if (typeof options !== "object" || options === null) fail("options must be an object");
  const resolved: Record<string, Record<string, number | boolean>> = {};
  for (const part of DEFAULT_CONTEXT_PARTS) resolved[part] = { ...DEFAULT_CONTEXT_DEFAULTS[part] };
  for (const [part, given] of Object.entries(options)) {
    const defaults = (DEFAULT_CONTEXT_DEFAULTS as Record<string, Record<string, number | boolean>>)[part];
    if (!defaults) fail(`unknown part "${part}"`);
    if (given === undefined) continue;
    if (typeof given !== "object" || given === null) fail(`${part} must be an object`);
    for (const [key, value] of Object.entries(given as Record<string, unknown>)) {
      const expected = defaults![key];
      if (expected === undefined) fail(`${part} has no option "${key}" (it has ${Object.keys(defaults!).join(", ")})`);
      if (value === undefined) continue;
      if (typeof expected === "boolean" ? typeof value !== "boolean" : !Number.isInteger(value) || (value as number) < 0) {
        fail(`${part}.${key} must be ${typeof expected === "boolean" ? "true or false" : "a non-negative integer"}, got ${JSON.stringify(value)}`);
      }
      resolved[part]![key] = value as number | boolean;
    }
  }
  return resolved as unknown as ResolvedDefaultContextOptions;
}

/** The model input a context policy builds. */
export interface ModelContext {
  /** System prompt: trusted instructions plus runtime contract sections. */
  instructions: string;
  messages: ModelMessage[];
  tools: ModelToolSpec[];
}

/** What a context policy knows about the run it builds for. */
export interface ContextBuildInfo {
  runId: string;
  agentId: string;
  conversationId?: string;
  metadata: Record<string, JsonValue>;
  /** The channel the run came from, with its metadata. */
  channel?: { name: string; metadata?: Record<string, JsonValue> };
}

export interface DefaultContextPolicy extends Branded<"assembly-line.context"> {
  readonly kind: "default";
  readonly options: DefaultContextOptions;
}

export interface CustomContextOptions<Options extends Record<string, unknown> = Record<string, unknown>> {
  kind: "custom";
  name: string;
  /** The policy whose output this one starts from; `defaultContext()` when omitted. */
  extends?: ContextPolicy;
  options?: Options;
  /** Reshape the model input the base policy built. Trusted runtime code. */
  build?(context: ModelContext, info: ContextBuildInfo & { options: Options }): ModelContext | Promise<ModelContext>;
}

export type CustomContextPolicy<Options extends Record<string, unknown> = Record<string, unknown>> =
  CustomContextOptions<Options> & Branded<"assembly-line.context">;

export type ContextPolicy = DefaultContextPolicy | CustomContextPolicy<any>;

/** The built-in context policy, configurable. */
export function defaultContext(options: DefaultContextOptions = {}): DefaultContextPolicy {
  resolveDefaultContextOptions(options);
  return brand("assembly-line.context", { kind: "default" as const, options });
}

/** A custom context policy extending another one. */
export function defineContext<Options extends Record<string, unknown>>(
  options: CustomContextOptions<Options>,
): CustomContextPolicy<Options> {
  const problem = customContextProblem(options);
  if (problem) {
    throw new AssemblyLineError("AL_ERR_CONTEXT_DEFINITION", `defineContext: ${problem}`, {
      fix: 'Pass { kind: "custom", name, extends?: defaultContext({...}) or another defineContext(...), options?, build? }.',
    });
  }
  return brand("assembly-line.context", options);
}

const CUSTOM_CONTEXT_FIELDS = ["kind", "name", "extends", "options", "build"];

/**
 * What defineContext would otherwise take and misread: a plain object as `extends` (its bounds
 * ignored, the default used), a typo in a field, a `build` that is no function.
 */
function customContextProblem(options: unknown): string | null {
  if (typeof options !== "object" || options === null || Array.isArray(options)) return "the policy must be an object";
  const policy = options as Record<string, unknown>;
  const unknown = Object.keys(policy).filter((key) => !CUSTOM_CONTEXT_FIELDS.includes(key));
  if (unknown.length > 0) return `unknown field${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")} (the fields are ${CUSTOM_CONTEXT_FIELDS.join(", ")})`;
  if (policy.kind !== "custom") return `kind is ${JSON.stringify(policy.kind) ?? "missing"}; a policy of your own is kind "custom"`;
  if (typeof policy.name !== "string" || policy.name.trim() === "") return "name must be a non-empty string";
  if (policy.extends !== undefined && !isContextPolicy(policy.extends)) return `extends of "${policy.name}" is not a context policy (made with defaultContext or defineContext)`;
  if (policy.options !== undefined && (typeof policy.options !== "object" || policy.options === null || Array.isArray(policy.options))) return `options of "${policy.name}" must be an object`;
  if (policy.build !== undefined && typeof policy.build !== "function") return `build of "${policy.name}" must be a function (context, info) => context`;
  return null;
}

export function isContextPolicy(value: unknown): value is ContextPolicy {
  return hasBrand(value, "assembly-line.context");
}
