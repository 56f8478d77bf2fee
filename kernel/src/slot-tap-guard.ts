import { AssemblyLineError, type AdapterDescriptor, type PluginDefinition } from "@assemblyline-agents/core";
import type { KernelHooks } from "./hooks.js";

type SlotTap = { type: string; name: string; fn: (...args: any[]) => unknown };

/**
 * Make every slot tap a plugin registers answer only its own descriptors: a tap that returned an
 * adapter for another plugin's descriptor would fill that plugin's slot with its own adapter (the
 * first tap to answer wins), while the host reports the named plugin in the slot. `owner()` is the
 * plugin whose apply(kernel) is running when the tap is registered; a tap registered outside any
 * plugin's apply is left as it is.
 */
export function guardSlotTaps(hooks: KernelHooks, owner: () => PluginDefinition | undefined): void {
  hooks.slot.intercept({
    factory: (slot, hook) => {
      hook.intercept({
        register: (tapInfo) => {
          const plugin = owner();
          return plugin ? guarded(tapInfo as unknown as SlotTap, plugin, String(slot)) as unknown as typeof tapInfo : tapInfo;
        },
      });
      return hook;
    },
  });
}

function guarded(tap: SlotTap, owner: PluginDefinition, slot: string): SlotTap {
  const plugin = owner.name;
  const check = (descriptor: AdapterDescriptor, adapter: unknown): unknown => {
    if (adapter === undefined || descriptor.plugin === plugin) return adapter;
    throw new AssemblyLineError("AL_ERR_PLUGIN_CONTRACT", `plugin ${plugin} answered the ${slot} descriptor of plugin ${descriptor.plugin} with an adapter of its own`, {
      fix: `A slot tap returns an adapter only when descriptor.plugin === "${plugin}", and undefined otherwise.`,
    });
  };
  const fn = tap.fn;
  if (tap.type === "promise") return { ...tap, fn: (descriptor: AdapterDescriptor, context: unknown) => Promise.resolve(fn(descriptor, context)).then((adapter) => check(descriptor, adapter)) };
  if (tap.type === "async") {
    return {
      ...tap,
      fn: (descriptor: AdapterDescriptor, context: unknown, callback: (error: unknown, adapter?: unknown) => void) =>
        fn(descriptor, context, (error: unknown, adapter?: unknown) => {
          if (error) return callback(error);
          let checked: unknown;
          try {
            checked = check(descriptor, adapter);
          } catch (refusal) {
            return callback(refusal);
          }
          return callback(null, checked);
        }),
    };
  }
  return {
    ...tap,
    fn: (descriptor: AdapterDescriptor, context: unknown) => {
      const answer = fn(descriptor, context);
      if (isThenable(answer)) refuseAsyncSyncTap(answer, owner, tap.name, slot);
      return check(descriptor, answer);
    },
  };
}

/**
 * A tap() tap's answer is its return value, so an async function's promise would be read as an
 * adapter, even when it resolves to undefined ("not mine"): its plugin passes no descriptor on.
 */
function refuseAsyncSyncTap(answer: PromiseLike<unknown>, owner: PluginDefinition, tapName: string, slot: string): never {
  // Refused unread: a rejection it may still bring is not left unhandled.
  void Promise.resolve(answer).catch(() => undefined);
  throw new AssemblyLineError("AL_ERR_PLUGIN_CONTRACT", `plugin ${owner.name}@${owner.version}'s ${slot} slot tap "${tapName}" was made with tap() and returned a promise; use tapPromise for an async slot tap`, {
    fix: `In plugin ${owner.name}, register that tap with kernel.hooks.slot.for("${slot}").tapPromise(...), or make its function synchronous.`,
    details: { plugin: owner.name, tap: tapName, slot },
  });
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}
