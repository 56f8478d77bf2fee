import { readFileSync } from "node:fs";
import {
  AssemblyLineError,
  GATEWAY_SLOTS,
  SLOT_CONTRACTS,
  isAdapterDescriptor,
  isAssemblyLineError,
  isTimerDelay,
  missingContractMethods,
  MAX_TIMER_MS,
  withinTimeout,
  DEFAULT_PLUGIN_TIMEOUT_MS,
  type GatewayDefinition,
  type KernelHost,
  type GatewaySlot,
  type PluginDefinition,
  type PluginKernel,
  type SlotContext,
  type StateAdapter,
} from "@assemblyline-agents/core";
import { createKernelHooks, type KernelHooks } from "./hooks.js";
import { guardSlotTaps } from "./slot-tap-guard.js";

/** This kernel's version, the one plugin manifests' `kernel` ranges are checked against. */
export const KERNEL_VERSION: string = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

export interface Kernel extends PluginKernel {
  readonly hooks: KernelHooks;
  readonly plugins: readonly PluginDefinition[];
}

/** Create the hooks and let each plugin tap them, in order. */
export async function createKernel(options: { plugins?: PluginDefinition[]; timeoutMs?: number } = {}): Promise<Kernel> {
  checkPluginTimeout(options.timeoutMs, "createKernel");
  // The plugin whose apply(kernel) is running: each tap registered meanwhile is its, for the errors that name it and the slot guard.
  let applying: PluginDefinition | undefined;
  const hooks = createKernelHooks({ applyingPlugin: () => applying });
  // A copy: a plugin that changed the caller's array would change which plugins are applied, and the caller's list.
  const plugins = Object.freeze([...(options.plugins ?? [])]);
  const kernel: Kernel = { version: KERNEL_VERSION, hooks, plugins };
  const pluginKernel = tapOnlyKernel(hooks, () => applying);
  guardSlotTaps(hooks, () => applying);
  for (const plugin of plugins) {
    const what = `plugin ${plugin.name}@${plugin.version} apply(kernel)`;
    applying = plugin;
    try {
      await withinTimeout(Promise.resolve().then(() => plugin.apply(pluginKernel)), options.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS, what);
    } catch (error) {
      if (isAssemblyLineError(error)) throw error;
      throw new AssemblyLineError("AL_ERR_PLUGIN_APPLY", `${what} threw: ${(error as Error).message}`, { fix: "Fix or remove that plugin.", cause: error });
    } finally {
      applying = undefined;
    }
  }
  return kernel;
}

/** The tap side of a tapable hook: registering taps, nothing that calls, inspects or intercepts the hook. */
type TapSide<H> = Pick<H, Extract<keyof H, "tap" | "tapPromise" | "tapAsync">>;

/** What a plugin's apply(kernel) gets: the kernel's version and each hook's tap side. */
export interface TapOnlyKernel extends PluginKernel {
  readonly hooks: { readonly slot: { for(slot: GatewaySlot): TapSide<ReturnType<KernelHooks["slot"]["for"]>> } } & {
    readonly [Name in Exclude<keyof KernelHooks, "slot">]: TapSide<KernelHooks[Name]>;
  };
}

/** What a kernel hook has besides its tap side: the kernel's alone. */
const KERNEL_ONLY_MEMBERS = ["intercept", "call", "callAsync", "promise", "taps", "interceptors", "isUsed", "withOptions", "get"];

/**
 * The kernel as plugins see it: taps only. The hooks themselves would let a plugin call them,
 * read other plugins' taps, or add an interceptor, whose `register` sees every later plugin's
 * taps (one could answer another plugin's slot descriptors past the slot guard). Reaching for
 * one of those is refused with an error naming the plugin.
 */
function tapOnlyKernel(hooks: KernelHooks, applying: () => PluginDefinition | undefined): TapOnlyKernel {
  const tapSide = <H extends object>(hook: H, name: string): TapSide<H> => {
    const side: Record<string, unknown> = {};
    // A sync hook's tapPromise and tapAsync throw tapable's own "not supported" error: kept, as plugins met it before.
    for (const method of ["tap", "tapPromise", "tapAsync"]) {
      const register = (hook as Record<string, unknown>)[method];
      if (typeof register === "function") side[method] = register.bind(hook);
    }
    return refuseKernelOnly(side, name, applying) as TapSide<H>;
  };
  return Object.freeze({
    version: KERNEL_VERSION,
    hooks: Object.freeze({
      slot: refuseKernelOnly({ for: (slot: GatewaySlot) => tapSide(hooks.slot.for(slot), `slot.for("${slot}")`) }, "slot", applying),
      channel: tapSide(hooks.channel, "channel"),
      harness: tapSide(hooks.harness, "harness"),
      context: tapSide(hooks.context, "context"),
      tools: tapSide(hooks.tools, "tools"),
      resolveRun: tapSide(hooks.resolveRun, "resolveRun"),
      event: tapSide(hooks.event, "event"),
    }),
  });
}

/** `side`, frozen, whose kernel-only members throw an error naming the plugin instead of reading as undefined. */
function refuseKernelOnly<T extends Record<string, unknown>>(side: T, hookName: string, applying: () => PluginDefinition | undefined): Readonly<T> {
  for (const member of KERNEL_ONLY_MEMBERS) {
    Object.defineProperty(side, member, {
      enumerable: false,
      get() {
        const plugin = applying();
        const who = plugin ? `plugin ${plugin.name}@${plugin.version}` : "a plugin";
        throw new AssemblyLineError("AL_ERR_PLUGIN_APPLY", `${who} reached for kernel.hooks.${hookName}.${member} in apply(kernel); plugins only tap the kernel's hooks`, {
          fix: `Register with tap, tapPromise or tapAsync; calling a hook, reading its taps and intercepting it are the kernel's.${plugin ? ` Fix ${who}, or leave it out of the host's plugins.` : ""}`,
        });
      },
    });
  }
  return Object.freeze(side);
}

export type MaterializedGateway = Partial<Record<GatewaySlot, unknown>>;

/**
 * Turn each slot's descriptor into a live adapter through `hooks.slot`, then
 * check it honours its slot's contract (state: the required `runs` facet).
 * When a slot fails, the adapters already opened (a connection pool, a folder
 * lock) are closed, in reverse order, before the error is rethrown: the caller
 * gets no handle to close them. A factory that settles after its timeout has
 * its adapter closed when it arrives.
 */
export async function materializeGateway(
  kernel: Kernel,
  gateway: GatewayDefinition,
  context: Omit<SlotContext, "slot">,
  options: { timeoutMs?: number } = {},
): Promise<MaterializedGateway> {
  checkPluginTimeout(options.timeoutMs, "materializeGateway");
  const timeoutMs = options.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS;
  const live: MaterializedGateway = {};
  const opened: Array<{ slot: GatewaySlot; plugin: string; adapter: unknown }> = [];
  try {
    await materializeSlots(kernel, gateway, context, timeoutMs, live, opened);
  } catch (error) {
    for (const { slot, plugin, adapter } of opened.reverse()) {
      // The boot already failed with `error`; a close that fails too must not hide it.
      await closeOpened(adapter, timeoutMs, `plugin ${plugin}'s ${slot} adapter close()`).catch(() => undefined);
    }
    throw error;
  }
  return live;
}

async function materializeSlots(
  kernel: Kernel,
  gateway: GatewayDefinition,
  context: Omit<SlotContext, "slot">,
  timeoutMs: number,
  live: MaterializedGateway,
  opened: Array<{ slot: GatewaySlot; plugin: string; adapter: unknown }>,
): Promise<void> {
  for (const slot of GATEWAY_SLOTS) {
    const descriptor = gateway[slot];
    if (descriptor === undefined) continue;
    if (!isAdapterDescriptor(descriptor)) {
      throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", `gateway.ts ${slot}: is not an adapter descriptor`, {
        fix: `Use a plugin helper (e.g. neonPostgres()) or adapter("name") for ${slot}.`,
      });
    }
    if (descriptor.slot !== undefined && descriptor.slot !== slot) {
      throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", `gateway.ts ${slot}: got a ${descriptor.slot} adapter from plugin ${descriptor.plugin}`, {
        fix: `Move it to the ${descriptor.slot}: slot.`,
      });
    }
    const what = `plugin ${descriptor.plugin} materializing the ${slot} slot`;
    // Slots after state (sandbox, scheduler) may keep their records in it.
    const slotContext: SlotContext = { ...context, slot, ...(live.state ? { state: live.state as StateAdapter } : {}) };
    const materializing = kernel.hooks.slot.for(slot).promise(descriptor, slotContext);
    let adapter: unknown;
    try {
      adapter = await withinTimeout(materializing, timeoutMs, what);
    } catch (error) {
      if (isAssemblyLineError(error, "AL_ERR_PLUGIN_TIMEOUT")) {
        materializing.then((late) => closeOpened(late, timeoutMs, `${what}: close() of the adapter that arrived late`), () => undefined).catch(() => undefined);
      }
      throw error;
    }
    if (adapter === undefined) {
      throw new AssemblyLineError("AL_ERR_GATEWAY_SLOT", `no installed plugin provides adapter "${descriptor.plugin}" for the ${slot} slot`, {
        fix: `Install it (assembly-line plugins add ${descriptor.plugin}) or pick an installed adapter.`,
      });
    }
    // Opened, even if it fails the contract check below: closed with the rest when a slot fails.
    opened.push({ slot, plugin: descriptor.plugin, adapter });
    const missing = missingContractMethods(adapter, SLOT_CONTRACTS[slot]);
    if (missing.length > 0) {
      throw new AssemblyLineError("AL_ERR_PLUGIN_CONTRACT", `plugin ${descriptor.plugin}'s ${slot} adapter lacks ${missing.join(", ")} (${SLOT_CONTRACTS[slot]})`, {
        fix: "Implement the missing methods; `assembly-line plugins verify` runs the conformance kit.",
      });
    }
    live[slot] = adapter;
  }
}

/** A timeoutMs a timer cannot wait for (0, Infinity, NaN, past MAX_TIMER_MS) would end every plugin call's wait at once. */
function checkPluginTimeout(timeoutMs: number | undefined, owner: string): void {
  if (timeoutMs === undefined || isTimerDelay(timeoutMs)) return;
  throw new TypeError(`${owner}: timeoutMs is ${String(timeoutMs)}; give a number of milliseconds above 0 and at most ${MAX_TIMER_MS} (about 24.8 days), or leave it out for the default ${DEFAULT_PLUGIN_TIMEOUT_MS}`);
}

/** Close an adapter that has a close(), bounded like every plugin call. */
async function closeOpened(adapter: unknown, timeoutMs: number, what: string): Promise<void> {
  const close = (adapter as { close?: unknown } | null | undefined)?.close;
  if (typeof close === "function") await withinTimeout(Promise.resolve().then(() => close.call(adapter)), timeoutMs, what);
}

/** The kernel as the registry's loader and verifier see it (they never import the kernel). */
export const kernelHost: KernelHost = {
  version: KERNEL_VERSION,
  moduleUrl: new URL("./index.js", import.meta.url).href,
  createKernel,
  materializeSlot: (kernel, descriptor, context) => (kernel as Kernel).hooks.slot.for(context.slot).promise(descriptor, context),
  materializeGateway: (kernel, gateway, context, options) => materializeGateway(kernel as Kernel, gateway, context, options),
};
