import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewaySlot, StateAdapter } from "@assemblyline-agents/core";
import type { PluginKernel } from "@assemblyline-agents/core";
import { kernelHost } from "./kernel-host.js";
import { pluginTimeoutMs } from "./plugin-timeout.js";
import { uniquePerTest } from "./unique-options.js";
import { closeAdapter, describeAdapter, inspectPluginPackage, materializeProvided, type InspectedPlugin } from "./load.js";

export interface ConformanceSubjectOptions {
  packageDir: string;
  slot: GatewaySlot;
  /** Passed to the provided export, as gateway.ts would. */
  options?: Record<string, unknown>;
  kernelVersion?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /**
   * The kit needs the schedule store the adapter reads (the scheduler kit): each
   * test gets a fresh in-memory state from the host's kernel module, passed to
   * the factory as the gateway's state, and the subject is { scheduler, schedules }.
   */
  withSchedules?: boolean;
}

/** A fresh in-memory state (every facet) from the host's kernel module, which exports InMemoryStateAdapter. */
async function memoryState(): Promise<StateAdapter> {
  const kernelModule = (await import(kernelHost().moduleUrl)) as { InMemoryStateAdapter?: new () => StateAdapter };
  if (!kernelModule.InMemoryStateAdapter) throw new Error(`the kernel module ${kernelHost().moduleUrl} exports no InMemoryStateAdapter for the scheduler kit`);
  return new kernelModule.InMemoryStateAdapter();
}

/**
 * A conformance-kit factory for a plugin's adapter, made the way a host makes
 * it: the package's export builds the descriptor, the plugin is applied to a
 * kernel, and hooks.slot materializes a fresh adapter in a fresh temporary agent
 * folder for every test. Cleanup closes it and removes the folder.
 * `plugins verify` imports this from the test file it generates.
 */
export function conformanceSubjectFactory(options: ConformanceSubjectOptions): () => Promise<{ state: never; cleanup: () => Promise<void> }> {
  const timeoutMs = pluginTimeoutMs(options.timeoutMs, "conformanceSubjectFactory");
  let prepared: Promise<{ plugin: InspectedPlugin; kernel: PluginKernel }> | undefined;
  return async () => {
    prepared ??= (async () => {
      const plugin = await inspectPluginPackage(options.packageDir, options.kernelVersion ? { kernelVersion: options.kernelVersion } : {});
      return { plugin, kernel: await kernelHost().createKernel({ plugins: [plugin.plugin!], timeoutMs }) };
    })();
    const { plugin, kernel } = await prepared;
    const provide = plugin.manifest.provides.find((entry) => entry.slot === options.slot)!;
    const descriptor = describeAdapter(plugin, provide, uniquePerTest(options.options));
    const agentDir = await mkdtemp(join(tmpdir(), `al-kit-${plugin.manifest.id}-`));
    const schedules = options.withSchedules ? await memoryState() : undefined;
    const context = { slot: options.slot, env: options.env ?? process.env, devMode: false, agentDir, ...(schedules ? { state: schedules } : {}) };
    let live: unknown;
    try {
      live = await materializeProvided(kernel, plugin, provide, descriptor, context, timeoutMs);
    } catch (error) {
      await rm(agentDir, { recursive: true, force: true });
      throw error;
    }
    return {
      state: (schedules ? { scheduler: live, schedules } : live) as never,
      cleanup: async () => {
        try {
          await closeAdapter(live, timeoutMs, `plugin ${plugin.manifest.id}'s ${options.slot} adapter close()`);
        } finally {
          await rm(agentDir, { recursive: true, force: true });
        }
      },
    };
  };
}
