import { brand, hasBrand, type Branded } from "./brand.js";
import type { JsonValue } from "./json.js";
import type { ChannelView } from "./tool-context.js";

export interface RunResolverContext {
  runId: string;
  agentId: string;
  conversationId?: string;
  message: string;
  metadata?: Record<string, JsonValue>;
  channel?: ChannelView;
}

/** What a resolver may decide for one run. */
export interface RunCapabilityDeclaration {
  /** Overrides the manifest model for this run (a host-forced model still wins). */
  model?: string;
  /** Appended to the authored instructions. */
  instructions?: string;
  /** Replaces the default-visible tool set wholesale (built-in names included). */
  defaultTools?: string[];
}

export type RunResolverFn = (
  ctx: RunResolverContext,
) => RunCapabilityDeclaration | null | undefined | Promise<RunCapabilityDeclaration | null | undefined>;

export interface RunResolverDefinition extends Branded<"assembly-line.resolver"> {
  readonly resolve: RunResolverFn;
}

/** Decide model, instructions and default tools per run. A throwing resolver fails the run. */
export function defineRunResolver(resolve: RunResolverFn): RunResolverDefinition {
  if (typeof resolve !== "function") {
    throw new TypeError("defineRunResolver(fn): fn must be a function (ctx) => declaration | null");
  }
  return brand("assembly-line.resolver", { resolve });
}

export function isRunResolverDefinition(value: unknown): value is RunResolverDefinition {
  return hasBrand(value, "assembly-line.resolver");
}
