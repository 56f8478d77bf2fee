import { brand, hasBrand, type Branded } from "./brand.js";
import type { AdapterDescriptor, GatewaySlot } from "./gateway.js";
import type { AgentHarness } from "./harness.js";
import type { ChannelModule } from "./channel.js";
import type { ContextBuildInfo, ModelContext } from "./model-context.js";
import type { RunCapabilityDeclaration, RunResolverContext } from "./resolver.js";
import type { RunEvent } from "./events.js";
import type { StateAdapter } from "./state/index.js";
import type { ToolTableInfo, ToolTableSurface } from "./tool.js";

export interface TapOptions {
  name: string;
  /** Lower runs first; use the kernel's named STAGE constants. */
  stage?: number;
}

/**
 * The tap side of a tapable hook, as plugins see it. A waterfall tap may
 * return undefined to pass the value on unchanged (tapable 2.3.5 types it so;
 * 2.3.4 did not, and the kernel's hooks satisfy this with either).
 */
export interface Tappable<Args extends unknown[], Result> {
  tap(options: string | TapOptions, fn: (...args: Args) => Result | undefined): void;
}

export interface AsyncTappable<Args extends unknown[], Result> extends Tappable<Args, Result | undefined | void> {
  tapPromise(options: string | TapOptions, fn: (...args: Args) => Promise<Result | undefined | void>): void;
}

/** `Result`, unless it is a promise: then nothing fits (a type error at the tap). */
export type NotPromise<Result> = Result extends PromiseLike<unknown> ? never : Result;

/**
 * A slot hook as plugins tap it. `tap` takes a synchronous function only: its return value
 * is the answer, so an async function's promise would be read as an adapter even when it
 * resolves to undefined. An async factory uses `tapPromise`.
 */
export interface SlotTappable<Args extends unknown[]> {
  tap<Result>(options: string | TapOptions, fn: (...args: Args) => NotPromise<Result>): void;
  tapPromise(options: string | TapOptions, fn: (...args: Args) => Promise<unknown>): void;
}

/** What a slot materializer receives besides the descriptor. */
export interface SlotContext {
  slot: GatewaySlot;
  env: Record<string, string | undefined>;
  devMode: boolean;
  /** The agent folder, for adapters that keep files beside it (local state). */
  agentDir?: string;
  /** The state adapter materialized for this gateway, for slots after it (sandbox sessions, schedules). */
  state?: StateAdapter;
}

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
 * The kernel's extension points as plugins tap them. The kernel declares them
 * (kernel/src/hooks.ts) as tapable hooks that satisfy this surface.
 */
export interface KernelHookSurface {
  /** Materialize a gateway slot from its descriptor; return undefined when the descriptor is not yours. */
  slot: { for(slot: GatewaySlot): SlotTappable<[AdapterDescriptor, SlotContext]> };
  /** Register channel modules by route. */
  channel: Tappable<[Map<string, ChannelModule>], Map<string, ChannelModule>>;
  /** Pick the engine for a model spec; return undefined to pass. */
  harness: AsyncTappable<[HarnessRequest], AgentHarness>;
  /** Reshape the model input. */
  context: AsyncTappable<[ModelContext, ContextBuildInfo], ModelContext>;
  /** Add tools from outside the agent folder (`table.provide(name, definition, { provider })`); return the table. */
  tools: Tappable<[ToolTableSurface, ToolTableInfo], ToolTableSurface>;
  /** Refine a run's capability declaration. */
  resolveRun: AsyncTappable<[RunCapabilityDeclaration | null, RunResolverContext], RunCapabilityDeclaration | null>;
  /** Observe each durably recorded event; observe-only. */
  event: AsyncTappable<[RunEvent, EventContext], void>;
}

/** What `apply(kernel)` receives. */
export interface PluginKernel {
  /** The running kernel's semver version. */
  readonly version: string;
  readonly hooks: KernelHookSurface;
}

export interface PluginOptions {
  /** The plugin id of its package manifest (`postgres`, `local`, ...). */
  name: string;
  version: string;
  /** Tap the kernel's hooks. Must settle; the loader times out one that never does. */
  apply(kernel: PluginKernel): void | Promise<void>;
}

export type PluginDefinition = PluginOptions & Branded<"assembly-line.plugin">;

/** A kernel plugin: a name, a version, and the hooks it taps. */
export function definePlugin(options: PluginOptions): PluginDefinition {
  if (typeof options?.name !== "string" || typeof options.apply !== "function") {
    throw new TypeError("definePlugin({ name, version, apply(kernel) }): name must be a string and apply a function");
  }
  return brand("assembly-line.plugin", options);
}

export function isPluginDefinition(value: unknown): value is PluginDefinition {
  return hasBrand(value, "assembly-line.plugin");
}

/**
 * What a host hands to code that must apply plugins without depending on the
 * kernel package (the registry's loader and verifier): the running kernel's
 * version and its two plugin entry points. `@assemblyline-agents/runtime`
 * exports one as `kernelHost`.
 */
export interface KernelHost {
  /** The running kernel's semver version. */
  readonly version: string;
  /** URL of the module exporting this object as `kernelHost`, for generated test files. */
  readonly moduleUrl: string;
  createKernel(options: { plugins?: PluginDefinition[]; timeoutMs?: number }): Promise<PluginKernel>;
  /** Call `hooks.slot.for(context.slot)` with one descriptor: the live adapter, or undefined when no tap claimed it. */
  materializeSlot(kernel: PluginKernel, descriptor: AdapterDescriptor, context: SlotContext): Promise<unknown>;
  materializeGateway(
    kernel: PluginKernel,
    gateway: import("./gateway.js").GatewayDefinition,
    context: Omit<SlotContext, "slot">,
    options?: { timeoutMs?: number },
  ): Promise<Partial<Record<GatewaySlot, unknown>>>;
}
