import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesWaterfallHook, HookMap, SyncWaterfallHook } from "tapable";
import type {
  AdapterDescriptor,
  AgentHarness,
  ChannelModule,
  ContextBuildInfo,
  GatewaySlot,
  ModelContext,
  RunCapabilityDeclaration,
  RunEvent,
  RunResolverContext,
} from "@assemblyline-agents/core";
import type { ToolTable, ToolTableInput } from "./run/tool-table.js";

/** What `hooks.slot.for(slot)` taps receive, besides the descriptor. */
export interface SlotContext {
  slot: GatewaySlot;
  env: Record<string, string | undefined>;
  devMode: boolean;
}

/** The run a harness is chosen for. */
export interface HarnessRequest {
  runId: string;
  modelSpec: string;
}

export interface EventContext {
  agentId: string;
  agentName: string;
  agentRevision: string;
}

/**
 * Every extension point of the kernel. Plugins tap these; nothing else reaches
 * into the kernel. Order taps with the stage constants below, never `before`.
 */
export function createKernelHooks() {
  return Object.freeze({
    /** Materialize a gateway slot from its descriptor; the first tap that returns a value wins. */
    slot: new HookMap((_slot: string) => new AsyncSeriesBailHook<[AdapterDescriptor, SlotContext], unknown>(["descriptor", "context"])),
    /** Register channel modules by route. */
    channel: new SyncWaterfallHook<[Map<string, ChannelModule>]>(["channels"]),
    /** Pick the engine for a model spec; the first tap that returns a harness wins. */
    harness: new AsyncSeriesBailHook<[HarnessRequest], AgentHarness | undefined>(["request"]),
    /** Build or reshape the model input. */
    context: new AsyncSeriesWaterfallHook<[ModelContext, ContextBuildInfo]>(["modelContext", "info"]),
    /** Shape the tool table: built-ins, authored tools, overrides, disables, policy. */
    tools: new SyncWaterfallHook<[ToolTable, ToolTableInput]>(["toolTable", "input"]),
    /** Per-run capability resolution (resolvers.ts); each tap may refine the declaration. */
    resolveRun: new AsyncSeriesWaterfallHook<[RunCapabilityDeclaration | null, RunResolverContext]>(["declaration", "ctx"]),
    /** Observe each durably recorded event; observe-only. */
    event: new AsyncParallelHook<[RunEvent, EventContext]>(["event", "context"]),
  });
}

export type KernelHooks = ReturnType<typeof createKernelHooks>;

/** Named stages for tap ordering (lower runs first). */
export const STAGE = {
  /** Host routes that must win over everything (`agentHarness`). */
  OVERRIDE: -2000,
  /** Host-owned routes (`modelHarnesses`, the built-in `scripted:` route). */
  ROUTE: -1000,
  /** Ordinary plugin taps. */
  DEFAULT: 0,
  /** Fallbacks such as the default engine. */
  FALLBACK: 1000,
} as const;
