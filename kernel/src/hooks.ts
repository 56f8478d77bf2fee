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

/** The plugin a tap belongs to, as its failures name it. */
export interface TapOwner {
  name: string;
  version: string;
}

export interface KernelHooksOptions {
  /** The plugin whose apply(kernel) is running, read when a tap registers: that tap's failures name it. */
  applyingPlugin?: () => TapOwner | undefined;
}

/**
 * Every extension point of the kernel. Plugins tap these; nothing else reaches
 * into the kernel. Order taps with the stage constants below, never `before`.
 */
export function createKernelHooks(options: KernelHooksOptions = {}) {
  const hooks = Object.freeze({
    /** Materialize a gateway slot from its descriptor; the first tap that returns a value wins. */
    slot: new HookMap((_slot: string) => new AsyncSeriesBailHook<[AdapterDescriptor, SlotContext], unknown>(["descriptor", "context"])),
    /** Register channel modules by route; one module per route: a tap that puts another module at a taken route is refused. */
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
  const describeTap = tapDescriber(options.applyingPlugin);
  for (const [name, hook] of Object.entries(hooks)) {
    if (hook instanceof HookMap) hook.intercept({ factory: (key, created) => nameFailures(`slot.for("${String(key)}")`, created, describeTap) });
    else nameFailures(name, hook, describeTap, { ...(name === "event" ? { sinkOf: observerFailureSink } : {}), ...(name in RESULT_CHECKS ? { checkResult: RESULT_CHECKS[name as keyof typeof RESULT_CHECKS] } : {}) });
  }
  oneModulePerRoute(hooks.channel, describeTap);
  return hooks;
}

/** How errors name a tap: `tap "<name>" of plugin <name>@<version>`, or only the tap when no plugin's apply(kernel) registered it. */
type TapDescriber = (tap: { name: string }) => { tap: string; fix: string };

function tapDescriber(applyingPlugin: (() => TapOwner | undefined) | undefined): TapDescriber {
  return (tap) => {
    const plugin = applyingPlugin?.();
    if (plugin === undefined) return { tap: `tap "${tap.name}"`, fix: `Fix the code that tapped "${tap.name}".` };
    const named = `plugin ${plugin.name}@${plugin.version}`;
    return { tap: `tap "${tap.name}" of ${named}`, fix: `Fix ${named} (its tap "${tap.name}"), or leave it out of the host's plugins.` };
  };
}

/** Who put the module at a route the map held before any tap ran. */
const CALLER_CLAIMANT = "the channels the host passed to hooks.channel (the agent's channels/ files)";

/**
 * Refuse a `channel` tap that puts a different module at a route the map already
 * holds (from the caller or an earlier tap), naming the route and both claimants:
 * otherwise the later plugin silently takes the earlier one's channel, and its
 * requests and replies.
 */
function oneModulePerRoute(hook: SyncWaterfallHook<[Map<string, ChannelModule>]>, describeTap: TapDescriber): void {
  // Who registered each route, per map a call passes along (a tap may return a new map).
  const claimants = new WeakMap<Map<string, ChannelModule>, Map<string, string>>();
  hook.intercept({
    register(tap) {
      const fn = tap.fn as (channels: Map<string, ChannelModule>) => Map<string, ChannelModule> | undefined;
      const claimant = describeTap(tap).tap;
      return {
        ...tap,
        fn: (channels: Map<string, ChannelModule>) => {
          const before = new Map(channels);
          const claimed = claimants.get(channels) ?? new Map([...channels.keys()].map((route) => [route, CALLER_CLAIMANT] as const));
          const after = fn(channels) ?? channels;
          for (const [route, module] of after) {
            const earlier = before.get(route);
            if (earlier === undefined) claimed.set(route, claimant);
            else if (earlier !== module) {
              const first = claimed.get(route) ?? CALLER_CLAIMANT;
              throw new AssemblyLineError("AL_ERR_HOOK_TAP", `hooks.channel ${claimant} puts its channel at the route ${route}, which ${first} already registered with another channel`, {
                fix: `Give one of the two channels another route (a channel helper's route option), or drop one of them: a route serves exactly one channel.`,
                details: { route, claimants: [first, claimant] },
              });
            }
          }
          claimants.set(after, claimed);
          return after;
        },
      };
    },
  });
}

/**
 * The key under which an `event` call's context carries where a failing observer is
 * reported. Each observer's failure is its own: reported there, it never cuts short
 * the others' delivery (AsyncParallelHook stops waiting at the first rejection, so
 * the agent's hooks/ would see the next event before this one).
 */
export const OBSERVER_FAILED: unique symbol = Symbol("assemblyline.observerFailed");

export type ObserverFailureSink = (error: AssemblyLineError, event: RunEvent) => void;

/** `context` carrying `sink` for observers' failures, under a key no observer sees by accident. */
export function withObserverFailureSink<C extends object>(context: C, sink: ObserverFailureSink): C {
  return Object.defineProperty({ ...context }, OBSERVER_FAILED, { value: sink, enumerable: false });
}

function observerFailureSink(args: unknown[]): ((error: AssemblyLineError) => void) | undefined {
  const [event, context] = args as [RunEvent, { [OBSERVER_FAILED]?: ObserverFailureSink } | undefined];
  const sink = context?.[OBSERVER_FAILED];
  return sink ? (error) => sink(error, event) : undefined;
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

/** A tap as tapable registers it (its FullTap type is not exported). */
interface RegisteredTap {
  name: string;
  type: "sync" | "async" | "promise";
  fn: Function;
}

/** The callback a `tapAsync` tap is handed last. */
type TapCallback = (error?: unknown, result?: unknown) => void;

/**
 * What a tap's answer must be, for the hooks whose answer the kernel uses as it is:
 * what is wrong with `answer`, or undefined when it will do. Without these, a bad
 * answer fails the run later with an error that names neither the tap nor its plugin.
 */
interface ResultCheck {
  problem(answer: unknown): string | undefined;
  /** What a tap of this hook returns instead. */
  fix: string;
}

const RESULT_CHECKS = {
  context: {
    problem(answer) {
      if (answer === undefined) return undefined;
      if (!isPlainRecord(answer)) return describedAnswer(answer);
      const missing = [
        typeof answer.instructions === "string" ? undefined : "instructions (a string)",
        Array.isArray(answer.messages) ? undefined : "messages (an array)",
        Array.isArray(answer.tools) ? undefined : "tools (an array)",
      ].filter((field) => field !== undefined);
      return missing.length > 0 ? `a model context without ${missing.join(", ")}` : undefined;
    },
    fix: "Return the model context the tap was given, changed ({ instructions, messages, tools }), or undefined to leave it as it is.",
  },
  harness: {
    problem(answer) {
      if (answer === undefined) return undefined;
      if ((typeof answer !== "object" && typeof answer !== "function") || answer === null || isThenable(answer)) return describedAnswer(answer);
      return typeof (answer as { runTurn?: unknown }).runTurn === "function" ? undefined : "an engine without a runTurn function";
    },
    fix: "Return an engine ({ name, runTurn(input, ctx) }) for the model specs the tap serves, and undefined for the others, so later taps are asked.",
  },
} satisfies Record<string, ResultCheck>;

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isThenable(value);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** A bad answer as an error names it. */
function describedAnswer(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (isThenable(value)) return "a promise (tap() does not wait for one: tap with tapPromise)";
  return typeof value === "object" ? "an object of another shape" : `a ${typeof value}`;
}

/**
 * Rethrow a tap's failure as an error naming the hook, the tap and its plugin, for
 * each kind of tap (`tap`, `tapPromise`, `tapAsync`); with `checkResult`, a tap's
 * answer the hook cannot use is such a failure too. AssemblyLineErrors already
 * say what is wrong and pass through unchanged. The names are settled when the tap
 * registers: a call only pays for a try/catch, or a catch on its promise.
 */
function nameFailures<H extends { intercept(interceptor: any): void }>(
  hookName: string,
  hook: H,
  describeTap: TapDescriber,
  options: {
    /** Where a call's failure is reported instead of thrown, when the call says (observers). */
    sinkOf?: (args: unknown[]) => ((error: AssemblyLineError) => void) | undefined;
    checkResult?: ResultCheck;
  } = {},
): H {
  const { sinkOf, checkResult } = options;
  hook.intercept({
    register(tap: RegisteredTap) {
      const fn = tap.fn as (...args: unknown[]) => unknown;
      const described = describeTap(tap);
      const checked = (answer: unknown): unknown => {
        const problem = checkResult?.problem(answer);
        if (problem === undefined) return answer;
        throw new AssemblyLineError("AL_ERR_HOOK_TAP", `hooks.${hookName} ${described.tap} returned ${problem}`, { fix: `${checkResult!.fix} ${described.fix}` });
      };
      const named = (error: unknown): AssemblyLineError =>
        isAssemblyLineError(error)
          ? error
          : new AssemblyLineError("AL_ERR_HOOK_TAP", `hooks.${hookName} ${described.tap} threw: ${error instanceof Error ? error.message : String(error)}`, {
              fix: described.fix,
              cause: error,
            });
      const wrap = (args: unknown[], error: unknown): undefined => {
        const sink = sinkOf?.(args);
        if (!sink) throw named(error);
        sink(named(error));
        return undefined;
      };
      if (tap.type === "promise") {
        return { ...tap, fn: (...args: unknown[]) => Promise.resolve().then(() => fn(...args)).then(checked).catch((error: unknown) => wrap(args, error)) };
      }
      if (tap.type === "sync") {
        return {
          ...tap,
          fn: (...args: unknown[]) => {
            try {
              return checked(fn(...args));
            } catch (error) {
              return wrap(args, error);
            }
          },
        };
      }
      return {
        ...tap,
        fn: (...argsAndCallback: unknown[]) => {
          const callback = argsAndCallback.at(-1) as TapCallback;
          const args = argsAndCallback.slice(0, -1);
          let answered = false;
          const fail = (error: unknown): void => {
            let reported: undefined;
            try {
              reported = wrap(args, error);
            } catch (renamed) {
              return callback(renamed);
            }
            callback(null, reported);
          };
          try {
            fn(...args, (error: unknown, result?: unknown) => {
              if (answered) return;
              answered = true;
              if (error) return fail(error);
              let answer: unknown;
              try {
                answer = checked(result);
              } catch (refusal) {
                return fail(refusal);
              }
              callback(null, answer);
            });
          } catch (error) {
            // A throw after it answered came from the hook's own continuation, not this tap.
            if (answered) throw error;
            answered = true;
            fail(error);
          }
        },
      };
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
