import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesWaterfallHook, HookMap, SyncWaterfallHook } from "tapable";
import { AssemblyLineError, isAssemblyLineError } from "@assemblyline-agents/core";
import type {
  AdapterDescriptor,
  AgentHarness,
  ChannelModule,
  ContextBuildInfo,
  EventContext,
  HarnessRequest,
  KernelHookSurface,
  ModelContext,
  RunCapabilityDeclaration,
  RunEvent,
  RunResolverContext,
  SlotContext,
} from "@assemblyline-agents/core";
import type { ToolTable, ToolTableInput } from "./run/tool-table.js";

/**
 * Every extension point of the kernel. Plugins tap these; nothing else reaches
 * into the kernel. Order taps with the stage constants below, never `before`.
 */
export function createKernelHooks() {
  const hooks = Object.freeze({
    /** Materialize a gateway slot from its descriptor; the first tap that returns a value wins. */
    slot: new HookMap((_slot: string) => new AsyncSeriesBailHook<[AdapterDescriptor, SlotContext], unknown>(["descriptor", "context"])),
    /** Register channel modules by route. */
    channel: new SyncWaterfallHook<[Map<string, ChannelModule>]>(["channels"]),
    /** Pick the engine for a model spec; the first tap that returns a harness wins. */
    harness: new AsyncSeriesBailHook<[HarnessRequest], AgentHarness | undefined>(["request"]),
    /** Build or reshape the model input. */
    context: new AsyncSeriesWaterfallHook<[ModelContext, ContextBuildInfo]>(["modelContext", "info"]),
    /** Shape the tool table: built-ins, authored tools, overrides, disables, policy; plugins `provide` more (deferred by default). */
    tools: new SyncWaterfallHook<[ToolTable, ToolTableInput]>(["toolTable", "input"]),
    /** Per-run capability resolution (resolvers.ts); each tap may refine the declaration. */
    resolveRun: new AsyncSeriesWaterfallHook<[RunCapabilityDeclaration | null, RunResolverContext]>(["declaration", "ctx"]),
    /** Observe each durably recorded event; observe-only (an agent's hooks/ files each get a copy of the event). */
    event: new AsyncParallelHook<[RunEvent, EventContext]>(["event", "context"]),
  });
  for (const [name, hook] of Object.entries(hooks)) {
    if (hook instanceof HookMap) hook.intercept({ factory: (key, created) => nameFailures(`slot.for("${String(key)}")`, created) });
    else nameFailures(name, hook);
  }
  return hooks;
}

/**
 * Whether calling `hook` reaches anyone: a tap, or an interceptor that sees calls.
 * tapable's `isUsed()` also counts interceptors that only wrap registrations, which
 * every kernel hook has (nameFailures), so it is true of every hook.
 */
export function reachesAnyone(hook: { taps: readonly unknown[]; interceptors: readonly HookCallInterceptor[] }): boolean {
  return hook.taps.length > 0 || hook.interceptors.some(seesCalls);
}

/**
 * Whether every tap of `hook` is synchronous (`tap`, not `tapPromise` or `tapAsync`) and no
 * interceptor sees calls: its `callAsync` then runs every tap and its callback before it
 * returns, so a caller need not wait for a promise per call.
 */
export function onlySyncTaps(hook: { taps: readonly { type: string }[]; interceptors: readonly HookCallInterceptor[] }): boolean {
  return hook.taps.every((tap) => tap.type === "sync") && !hook.interceptors.some(seesCalls);
}

/** Whether an interceptor runs when the hook is called (not only when a tap registers). */
function seesCalls(interceptor: HookCallInterceptor): boolean {
  return Boolean(interceptor.call || interceptor.tap || interceptor.loop || interceptor.result || interceptor.error || interceptor.done);
}

/** The parts of a tapable interceptor that run when the hook is called. */
interface HookCallInterceptor {
  call?: unknown;
  tap?: unknown;
  loop?: unknown;
  result?: unknown;
  error?: unknown;
  done?: unknown;
}

/**
 * Rethrow a tap's failure as an error naming the hook and the plugin's tap.
 * AssemblyLineErrors already say what is wrong and pass through unchanged.
 */
/** A tap as tapable registers it (its FullTap type is not exported). */
interface RegisteredTap {
  name: string;
  type: "sync" | "async" | "promise";
  fn: Function;
}

function nameFailures<H extends { intercept(interceptor: any): void }>(hookName: string, hook: H): H {
  hook.intercept({
    register(tap: RegisteredTap) {
      const fn = tap.fn as (...args: unknown[]) => unknown;
      const wrap = (error: unknown): never => {
        if (isAssemblyLineError(error)) throw error;
        throw new AssemblyLineError("AL_ERR_HOOK_TAP", `hooks.${hookName} tap "${tap.name}" threw: ${error instanceof Error ? error.message : String(error)}`, {
          fix: `Fix the plugin that tapped "${tap.name}".`,
          cause: error,
        });
      };
      if (tap.type === "promise") {
        return { ...tap, fn: (...args: unknown[]) => Promise.resolve().then(() => fn(...args)).catch(wrap) };
      }
      if (tap.type === "sync") {
        return {
          ...tap,
          fn: (...args: unknown[]) => {
            try {
              return fn(...args);
            } catch (error) {
              return wrap(error);
            }
          },
        };
      }
      return tap;
    },
  });
  return hook;
}

export type KernelHooks = ReturnType<typeof createKernelHooks>;

export type { SlotContext, HarnessRequest, EventContext };

// The hooks plugins tap must stay assignable to the surface the SDK promises them.
const _surface: (hooks: KernelHooks) => KernelHookSurface = (hooks) => hooks;
void _surface;

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
