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
  const plugins = options.plugins ?? [];
  const kernel: Kernel = { version: KERNEL_VERSION, hooks, plugins };
  guardSlotTaps(hooks, () => applying);
  for (const plugin of plugins) {
    const what = `plugin ${plugin.name}@${plugin.version} apply(kernel)`;
    applying = plugin;
    try {
      await withinTimeout(Promise.resolve().then(() => plugin.apply(kernel)), options.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS, what);
    } catch (error) {
      if (isAssemblyLineError(error)) throw error;
      throw new AssemblyLineError("AL_ERR_PLUGIN_APPLY", `${what} threw: ${(error as Error).message}`, { fix: "Fix or remove that plugin.", cause: error });
    } finally {
      applying = undefined;
    }
  }
  return kernel;
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
