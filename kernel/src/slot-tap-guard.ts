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
          return plugin ? guarded(tapInfo as unknown as SlotTap, plugin.name, String(slot)) as unknown as typeof tapInfo : tapInfo;
        },
      });
      return hook;
    },
  });
}

function guarded(tap: SlotTap, plugin: string, slot: string): SlotTap {
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
  return { ...tap, fn: (descriptor: AdapterDescriptor, context: unknown) => check(descriptor, fn(descriptor, context)) };
}
