import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  SLOT_CONTRACTS,
  isAdapterDescriptor,
  isPluginDefinition,
  missingContractMethods,
  type AdapterDescriptor,
  type PluginDefinition,
  type SlotContext,
} from "@assemblyline-agents/core";
import { DEFAULT_PLUGIN_TIMEOUT_MS, withinTimeout, type PluginKernel } from "@assemblyline-agents/core";
import { kernelHost } from "./kernel-host.js";
import { pluginTimeoutMs } from "./plugin-timeout.js";
import { checkAdapterOptions, compileConfigSchema } from "./config-schema.js";
import { checkCoreRange, checkKernelRange, pluginRefusal, readPluginPackage, type PluginPackage, type PluginProvide } from "./manifest.js";
import { hostCoreVersion, importPackageMain } from "./package-main.js";

/** A plugin package whose manifest, kernel range and exports check out. */
export interface InspectedPlugin extends PluginPackage {
  /** The package main's `plugin` export: the object the kernel applies (undefined only when it provides nothing). */
  plugin: PluginDefinition | undefined;
  /** The package main's exports. */
  exports: Record<string, unknown>;
}

export interface InspectOptions {
  /** The kernel the plugin must fit. Default: this host's KERNEL_VERSION. */
  kernelVersion?: string;
  /** The @assemblyline-agents/core its declared range on the SDK must include. Default: the host's, which its imports are bound to. */
  coreVersion?: string;
}

/**
 * Checks 1-3a of loading, without constructing anything: manifest shape, kernel
 * range and the declared range on @assemblyline-agents/core, then the exports (the package main imports; it exports `plugin` =
 * definePlugin({ name: <id>, version: <package version> }); each provided
 * `export` is a function; each contract is one this SDK knows; config schemas compile).
 */
export async function inspectPluginPackage(packageDir: string, options: InspectOptions = {}): Promise<InspectedPlugin> {
  const pkg = await readPluginPackage(packageDir);
  checkKernelRange(pkg, options.kernelVersion ?? kernelHost().version);
  checkCoreRange(pkg, options.coreVersion ?? hostCoreVersion());
  for (const provide of pkg.manifest.provides) checkKnownContract(pkg, provide);

  const exports = await importPackageMain(pkg);
  const plugin = exports.plugin;
  if (plugin === undefined && pkg.manifest.provides.length > 0) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_EXPORT",
      pkg,
      "its main module has no `plugin` export, so the kernel has nothing to apply for the adapters it provides",
      `Add \`export const plugin = definePlugin({ name: "${pkg.manifest.id}", version: "${pkg.version}", apply(kernel) { ... } })\` to the package main.`,
    );
  }
  if (plugin !== undefined) checkPluginExport(pkg, plugin);
  for (const provide of pkg.manifest.provides) {
    if (typeof exports[provide.export] !== "function") {
      throw pluginRefusal(
        "AL_ERR_PLUGIN_EXPORT",
        pkg,
        `assemblyLine.provides names the export "${provide.export}" for its ${provide.slot} adapter "${provide.name}", but the main module ${exports[provide.export] === undefined ? "has no such export" : `exports a ${typeof exports[provide.export]}`}`,
        `Export a function ${provide.export}(options) that returns adapterDescriptor("${provide.slot}", "${pkg.manifest.id}", options), or fix the name in the manifest.`,
      );
    }
    await compileConfigSchema(pkg, provide);
  }
  const helpers = [
    ...(pkg.manifest.channels ?? []).map((entry) => ({ list: "channels", what: "channel", helper: "the channel helper", entry })),
    ...(pkg.manifest.harnesses ?? []).map((entry) => ({ list: "harnesses", what: "engine", helper: "the engine factory", entry })),
    ...(pkg.manifest.telemetrySinks ?? []).map((entry) => ({ list: "telemetrySinks", what: "telemetry sink", helper: "the sink factory", entry })),
  ];
  for (const { list, what, helper, entry } of helpers) {
    if (typeof exports[entry.export] !== "function") {
      throw pluginRefusal(
        "AL_ERR_PLUGIN_EXPORT",
        pkg,
        `assemblyLine.${list} names the export "${entry.export}" for ${what} "${entry.name}", but the main module ${exports[entry.export] === undefined ? "has no such export" : `exports a ${typeof exports[entry.export]}`}`,
        `Export ${helper} ${entry.export}(options), or fix the name in the manifest.`,
      );
    }
  }
  return { ...pkg, plugin: plugin as PluginDefinition | undefined, exports };
}

function checkKnownContract(pkg: PluginPackage, provide: PluginProvide): void {
  const expected = SLOT_CONTRACTS[provide.slot];
  if (provide.contract === expected) return;
  const [name] = provide.contract.split("@");
  const rule =
    name === expected.split("@")[0]
      ? `its ${provide.slot} adapter "${provide.name}" claims contract ${provide.contract}, but this kernel's SDK speaks ${expected}`
      : `its ${provide.slot} adapter "${provide.name}" claims contract ${provide.contract}; the ${provide.slot} slot takes ${expected}`;
  throw pluginRefusal("AL_ERR_PLUGIN_CONTRACT", pkg, rule, `Declare "contract": "${expected}" and implement it, or use a kernel whose SDK speaks ${provide.contract}.`);
}

function checkPluginExport(pkg: PluginPackage, plugin: unknown): void {
  const fix = `Export \`plugin = definePlugin({ name: "${pkg.manifest.id}", version: "${pkg.version}", apply(kernel) { ... } })\`; read the version from package.json so a stale build is noticed.`;
  if (!isPluginDefinition(plugin)) {
    throw pluginRefusal("AL_ERR_PLUGIN_EXPORT", pkg, "its `plugin` export was not made by definePlugin(...)", fix);
  }
  if (plugin.name !== pkg.manifest.id || plugin.version !== pkg.version) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_EXPORT",
      pkg,
      `its \`plugin\` export is definePlugin({ name: "${plugin.name}", version: "${plugin.version}" }), not the manifest's id "${pkg.manifest.id}" at package version ${pkg.version}`,
      fix,
    );
  }
}

/** Call a provided export the way gateway.ts does and check it returns this plugin's descriptor. */
export function describeAdapter(plugin: InspectedPlugin, provide: PluginProvide, options: Record<string, unknown> | undefined): AdapterDescriptor {
  const helper = plugin.exports[provide.export] as (options?: Record<string, unknown>) => unknown;
  let descriptor: unknown;
  try {
    descriptor = options === undefined ? helper() : helper(options);
  } catch (error) {
    throw pluginRefusal("AL_ERR_PLUGIN_EXPORT", plugin, `${provide.export}(${options === undefined ? "" : "options"}) threw: ${(error as Error).message}`, "A descriptor helper must only record its options; validate them in the factory or the config schema.", {
      cause: error,
    });
  }
  if (!isAdapterDescriptor(descriptor) || (descriptor.slot !== undefined && descriptor.slot !== provide.slot) || descriptor.plugin !== plugin.manifest.id) {
    const got = isAdapterDescriptor(descriptor) ? `a descriptor for slot ${String(descriptor.slot)} of plugin "${descriptor.plugin}"` : "no adapter descriptor";
    throw pluginRefusal(
      "AL_ERR_PLUGIN_EXPORT",
      plugin,
      `${provide.export}() returned ${got}, not a ${provide.slot} descriptor of plugin "${plugin.manifest.id}"`,
      `Return adapterDescriptor("${provide.slot}", "${plugin.manifest.id}", options) from ${provide.export}.`,
    );
  }
  return descriptor;
}

/** The facets a state adapter claims (runs for anything else, which missingContractMethods ignores). */
export const claimedFacets = (provide: PluginProvide) => provide.facets ?? ["runs" as const];

/** Check a live adapter against the contract its manifest entry claims. */
export function checkLiveContract(plugin: PluginPackage, provide: PluginProvide, live: unknown): void {
  const missing = missingContractMethods(live, provide.contract, claimedFacets(provide));
  if (missing.length === 0) return;
  const claim = provide.facets ? `${provide.contract} with facets ${provide.facets.join(", ")}` : provide.contract;
  throw pluginRefusal(
    "AL_ERR_PLUGIN_CONTRACT",
    plugin,
    `its ${provide.slot} adapter "${provide.name}" claims ${claim} but lacks ${missing.join(", ")}`,
    provide.facets ? "Implement the missing methods, or drop the facets it does not implement from assemblyLine.provides[].facets." : "Implement the missing methods.",
    { details: { missing, slot: provide.slot, adapter: provide.name } },
  );
}

export interface LoadPluginOptions extends InspectOptions {
  /** The options a user would pass to each provided export in gateway.ts. Default: none. */
  options?: Record<string, unknown>;
  /** Bound on apply(kernel), on each adapter factory and each close(): above 0, at most MAX_TIMER_MS. Default DEFAULT_PLUGIN_TIMEOUT_MS. */
  timeoutMs?: number;
  /** What factories see as ctx.env. Default: process.env. */
  env?: Record<string, string | undefined>;
  devMode?: boolean;
  /** What factories see as ctx.agentDir. Default: a temporary folder, removed afterwards. */
  agentDir?: string;
}

export interface LoadedAdapter {
  provide: PluginProvide;
  descriptor: AdapterDescriptor;
}

export interface LoadedPlugin extends InspectedPlugin {
  adapters: LoadedAdapter[];
}

/**
 * Load a plugin package and prove it, in this order; the first broken rule
 * refuses with an error naming the plugin, its version, the rule and the fix:
 *
 * 1. manifest shape: plugin-schema.json, bounded kernel range   AL_ERR_PLUGIN_MANIFEST
 * 2. kernel range includes `kernelVersion`, and the package's range on
 *    @assemblyline-agents/core (peer, else regular dependency) the host's core  AL_ERR_PLUGIN_KERNEL_MISMATCH
 * 3. contracts, statically: each is the slot's known contract    AL_ERR_PLUGIN_CONTRACT
 *    the main imports                                            AL_ERR_PLUGIN_IMPORT
 *    it exports `plugin` (definePlugin, name = id, version = package version),
 *    each provided export is a function returning this plugin's descriptor  AL_ERR_PLUGIN_EXPORT
 *    config schemas compile                                      AL_ERR_PLUGIN_CONFIG_SCHEMA
 * 4. options: each descriptor's options against the config schema  AL_ERR_PLUGIN_OPTIONS
 * 5. contracts, live: createKernel({ plugins: [plugin] }) then hooks.slot per
 *    descriptor (each bounded by timeoutMs: AL_ERR_PLUGIN_TIMEOUT); the live
 *    object must have every method of its contract and claimed facets  AL_ERR_PLUGIN_CONTRACT
 *
 * Options are checked before the live step on purpose: an adapter factory may
 * open files or connections with them. Live adapters are closed afterwards.
 */
export async function loadPluginPackage(packageDir: string, options: LoadPluginOptions = {}): Promise<LoadedPlugin> {
  const timeoutMs = pluginTimeoutMs(options.timeoutMs, "loadPluginPackage");
  const plugin = await inspectPluginPackage(packageDir, options);
  const adapters = plugin.manifest.provides.map((provide) => ({ provide, descriptor: describeAdapter(plugin, provide, options.options) }));
  for (const { provide, descriptor } of adapters) await checkAdapterOptions(plugin, provide, descriptor.options);
  if (adapters.length === 0) return { ...plugin, adapters };

  const kernel = await kernelHost().createKernel({ plugins: [plugin.plugin!], timeoutMs });
  const temporary = options.agentDir === undefined ? await mkdtemp(join(tmpdir(), `al-plugin-${plugin.manifest.id}-`)) : undefined;
  const context = { env: options.env ?? process.env, devMode: options.devMode ?? false, agentDir: options.agentDir ?? temporary! };
  try {
    for (const { provide, descriptor } of adapters) {
      const live = await materializeProvided(kernel, plugin, provide, descriptor, { ...context, slot: provide.slot }, timeoutMs);
      try {
        checkLiveContract(plugin, provide, live);
      } finally {
        await closeAdapter(live, timeoutMs, `plugin ${plugin.manifest.id}@${plugin.version}'s ${provide.slot} adapter "${provide.name}" close()`);
      }
    }
  } finally {
    if (temporary) await rm(temporary, { recursive: true, force: true });
  }
  return { ...plugin, adapters };
}

/** Turn one descriptor into its live adapter through the kernel's slot hook, bounded in time. */
export async function materializeProvided(
  kernel: PluginKernel,
  plugin: PluginPackage,
  provide: PluginProvide,
  descriptor: AdapterDescriptor,
  context: SlotContext,
  timeoutMs: number = DEFAULT_PLUGIN_TIMEOUT_MS,
): Promise<unknown> {
  const what = `plugin ${plugin.manifest.id}@${plugin.version}: hooks.slot.for("${provide.slot}") materializing "${provide.name}"`;
  const live = await withinTimeout(kernelHost().materializeSlot(kernel, descriptor, context), timeoutMs, what);
  if (live === undefined || live === null) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_CONTRACT",
      plugin,
      `hooks.slot.for("${provide.slot}") returned nothing for the descriptor ${provide.export}() makes`,
      `In apply(kernel), tap kernel.hooks.slot.for("${provide.slot}") and return the adapter when descriptor.plugin === "${plugin.manifest.id}".`,
    );
  }
  return live;
}

/** Release a live adapter's files or connections, when it has a close(). */
export async function closeAdapter(live: unknown, timeoutMs: number, what: string): Promise<void> {
  const close = (live as { close?: unknown } | null)?.close;
  if (typeof close === "function") await withinTimeout(Promise.resolve(close.call(live)), timeoutMs, what);
}
