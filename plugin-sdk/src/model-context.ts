import { brand, hasBrand, type Branded } from "./brand.js";
import type { JsonValue } from "./json.js";
import type { ModelMessage, ModelToolSpec } from "./model.js";

export interface DefaultContextOptions {
  /** Bounded recent history: at most this many prior messages reach the model. Default 20. */
  recentHistory?: { maxMessages?: number };
  /** Include the `/files` manifest in the prompt. Default true. */
  files?: { includeManifest?: boolean };
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
  const max = options.recentHistory?.maxMessages;
  if (max !== undefined && (!Number.isInteger(max) || max < 0)) {
    throw new TypeError(`defaultContext: recentHistory.maxMessages must be a non-negative integer, got ${String(max)}`);
  }
  return brand("assembly-line.context", { kind: "default" as const, options });
}

/** A custom context policy extending another one. */
export function defineContext<Options extends Record<string, unknown>>(
  options: CustomContextOptions<Options>,
): CustomContextPolicy<Options> {
  return brand("assembly-line.context", options);
}

export function isContextPolicy(value: unknown): value is ContextPolicy {
  return hasBrand(value, "assembly-line.context");
}
