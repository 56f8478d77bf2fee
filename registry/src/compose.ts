import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import {
  AssemblyLineError,
  GATEWAY_SLOTS,
  adapterDescriptor,
  defineGateway,
  isAssemblyLineError,
  noopLogger,
  type AdapterDescriptor,
  type GatewayDefinition,
  type GatewaySlot,
  type PluginDefinition,
  type RuntimeLogger,
} from "@assemblyline-agents/core";
import type { PluginKernel } from "@assemblyline-agents/core";
import { kernelHost } from "./kernel-host.js";
import { pluginTimeoutMs } from "./plugin-timeout.js";
import { checkAdapterOptions } from "./config-schema.js";
import { scanInstalledPlugins, type DiscoveredPlugin } from "./discover.js";
import { checkLiveContract, closeAdapter, inspectPluginPackage, type InspectedPlugin } from "./load.js";
import { pluginRefusal, readPluginPackage, type PluginProvide } from "./manifest.js";
import { readRegistryIndex } from "./registry-data.js";
import { REGISTRY_DIR } from "./schemas.js";

export interface ComposeGatewayOptions {
  /** The agent's gateway.ts default export (`bundle.sourceBundle.gateway`); null or undefined composes nothing. */
  gateway: GatewayDefinition | null | undefined;
  /**
   * The agent's sandbox.ts as built (`bundle.manifest.sandbox`): a non-local
   * adapter fills the sandbox slot when gateway.ts leaves it empty, resolved
   * through the installed plugins like any slot.
   */
  sandbox?: { adapter: string; options?: Record<string, unknown> } | null;
  /** The agent folder: plugins are looked up from its node_modules upwards, and factories see it as ctx.agentDir. */
  agentDir: string;
  /** What factories read and the `env` check covers. Default: process.env. */
  env?: Record<string, string | undefined>;
  /** Dev mode warns about missing required variables instead of refusing to boot. Default false. */
  devMode?: boolean;
  /** Plugin package folders to use before anything installed (e.g. a plugin under development). */
  plugins?: string[];
  /** Default: this host's KERNEL_VERSION. */
  kernelVersion?: string;
  /** Bound on each plugin's apply(kernel), each adapter factory and each close(): above 0, at most MAX_TIMER_MS. Default DEFAULT_PLUGIN_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Receives the dev-mode warnings. Default: none. */
  logger?: RuntimeLogger;
}

/** One filled slot: the adapter, and the plugin and manifest entry it came from. */
export interface ComposedSlot {
  slot: GatewaySlot;
  descriptor: AdapterDescriptor;
  plugin: InspectedPlugin;
  provide: PluginProvide;
}

export interface ComposedGateway {
  /** The live adapter per slot the gateway fills. */
  adapters: Partial<Record<GatewaySlot, unknown>>;
  /** The kernel the chosen plugins were applied to; hand it to the runtime. */
  kernel: PluginKernel;
  slots: ComposedSlot[];
  /** Environment variables the chosen plugins require that are unset (dev mode boots anyway). */
  missingEnv: MissingEnvVar[];
  /** Close every adapter that has a close(), in reverse slot order. */
  close(): Promise<void>;
}

export interface MissingEnvVar {
  name: string;
  plugin: string;
  slots: GatewaySlot[];
  description?: string;
}

/**
 * Turn gateway.ts into live adapters, in one call for a host:
 *
 *   const { adapters, kernel, close } = await composeGateway({ gateway: bundle.sourceBundle.gateway, agentDir, devMode });
 *
 * For each slot: find the installed package whose manifest id is the
 * descriptor's `plugin` (`plugins` folders first, then node_modules from the
 * agent folder up, then from the host's own install), check its manifest,
 * kernel range and exports, and the descriptor's options against its config
 * schema. Then check the `env` each chosen plugin declares required (production
 * refuses listing every missing variable; dev mode warns), apply the plugins to
 * one kernel, materialize through hooks.slot, and check each live adapter against
 * the contract and facets its manifest claims.
 */
export async function composeGateway(options: ComposeGatewayOptions): Promise<ComposedGateway> {
  const timeoutMs = pluginTimeoutMs(options.timeoutMs, "composeGateway");
  const agentDir = resolve(options.agentDir);
  const env = options.env ?? process.env;
  const devMode = options.devMode ?? false;
  const gateway = withSandboxFile(options.gateway ?? ({} as GatewayDefinition), options.sandbox);
  // The sandbox slot's descriptor came from sandbox.ts (gateway.ts has none): a refusal of its options points there.
  const sandboxFromFile = gateway.sandbox !== undefined && options.gateway?.sandbox === undefined;
  const finder = new PluginFinder(agentDir, options.plugins ?? []);

  const slots: ComposedSlot[] = [];
  const inspected = new Map<string, InspectedPlugin>();
  for (const slot of GATEWAY_SLOTS) {
    const descriptor = gateway[slot];
    if (descriptor === undefined) continue;
    const id = descriptor.plugin;
    let plugin = inspected.get(id);
    if (!plugin) {
      plugin = await inspectPluginPackage((await finder.find(id, slot)).dir, options.kernelVersion ? { kernelVersion: options.kernelVersion } : {});
      inspected.set(id, plugin);
    }
    const provide = plugin.manifest.provides.find((entry) => entry.slot === slot);
    if (!provide) {
      const offered = plugin.manifest.provides.map((entry) => entry.slot).join(", ") || "no slot";
      throw pluginRefusal("AL_ERR_GATEWAY_SLOT", plugin, `gateway.ts puts it in the ${slot} slot, but it provides ${offered}`, `Move it to a slot it provides, or choose a plugin that provides ${slot}.`);
    }
    await checkAdapterOptions(plugin, provide, descriptor.options, slot === "sandbox" && sandboxFromFile ? { file: "sandbox.ts", call: `the default export (${provide.export}(...) or defineSandbox({ adapter: "${id}", ... }))` } : undefined);
    slots.push({ slot, descriptor, plugin, provide });
  }

  const missingEnv = missingVariables(slots, env);
  if (missingEnv.length > 0) {
    const list = missingEnv.map((variable) => `${variable.name} (plugin ${variable.plugin}, ${variable.slots.join("/")})`).join(", ");
    if (!devMode) {
      throw new AssemblyLineError("AL_ERR_GATEWAY_ENV", `the gateway's plugins need environment variables that are not set: ${list}`, {
        fix: `Set ${missingEnv.map((variable) => variable.name).join(", ")} in the host's environment (dev mode only warns).`,
        details: { missing: missingEnv },
      });
    }
    for (const variable of missingEnv) {
      (options.logger ?? noopLogger()).warn({ variable: variable.name, plugin: variable.plugin, slots: variable.slots }, `${variable.name} is not set; plugin ${variable.plugin} requires it in production`);
    }
  }

  const plugins = [...new Set(slots.map((entry) => entry.plugin.plugin!))] as PluginDefinition[];
  const host = kernelHost();
  const kernel = await host.createKernel({ plugins, timeoutMs });
  const adapters = await host.materializeGateway(kernel, gateway, { env, devMode, agentDir }, { timeoutMs });
  const close = async () => {
    for (const entry of [...slots].reverse()) {
      await closeAdapter(adapters[entry.slot], timeoutMs, `plugin ${entry.plugin.manifest.id}'s ${entry.slot} adapter close()`);
    }
  };
  try {
    for (const entry of slots) checkLiveContract(entry.plugin, entry.provide, adapters[entry.slot]);
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  return { adapters, kernel, slots, missingEnv, close };
}

/** gateway.ts with sandbox.ts's adapter in the sandbox slot; the two must not name different adapters. */
export function withSandboxFile(gateway: GatewayDefinition, sandbox: ComposeGatewayOptions["sandbox"]): GatewayDefinition {
  if (!sandbox) return gateway;
  const chosen = gateway.sandbox;
  if (chosen) {
    if (chosen.plugin !== sandbox.adapter) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox.ts chooses the "${sandbox.adapter}" sandbox but gateway.ts's sandbox slot chooses "${chosen.plugin}"`, {
        fix: "Choose the sandbox in one place: remove sandbox.ts or gateway.ts's sandbox: entry.",
      });
    }
    // gateway.ts's entry is the one materialized: sandbox.ts's settings would be dropped unseen.
    const dropped = Object.keys(sandbox.options ?? {}).filter((key) => key !== "adapter" && key !== "workingDirectory");
    if (dropped.length > 0) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox.ts and gateway.ts's sandbox slot both configure the "${chosen.plugin}" sandbox: gateway.ts's options would be used and sandbox.ts's ${dropped.join(", ")} ignored`, {
        fix: "Configure the sandbox in one place: move its options into gateway.ts's sandbox: entry and remove sandbox.ts, or remove the entry.",
        details: { ignored: dropped },
      });
    }
    return gateway;
  }
  // The local sandbox is the host's embedded default; nothing to resolve.
  if (sandbox.adapter === "local") return gateway;
  return defineGateway({ ...gateway, sandbox: adapterDescriptor("sandbox", sandbox.adapter, { ...sandbox.options }) });
}

/**
 * The build-time half of resolving sandbox.ts: its adapter's plugin must be
 * installed where the agent resolves packages, or the build fails naming the
 * package to install.
 */
export async function checkSandboxAdapterInstalled(adapter: string, agentDir: string, plugins: string[] = []): Promise<void> {
  if (adapter === "local") return;
  try {
    await new PluginFinder(resolve(agentDir), plugins).find(adapter, "sandbox");
  } catch (error) {
    if (!isAssemblyLineError(error, "AL_ERR_PLUGIN_NOT_FOUND")) throw error;
    const listed = await readRegistryIndex().then((index) => index.plugins[adapter]?.package, () => undefined);
    throw new AssemblyLineError("AL_ERR_SANDBOX_ADAPTER_NOT_INSTALLED", `sandbox.ts uses the "${adapter}" sandbox, but no installed package provides it${listed ? ` (it is ${listed})` : ""}`, {
      fix: listed ? `Install it: npm install ${listed} (or assembly-line plugins add ${adapter}).` : `Install the package that provides the "${adapter}" sandbox (assembly-line plugins search sandbox), or use adapter: "local".`,
      details: { adapter, ...(listed ? { package: listed } : {}) },
    });
  }
}

/**
 * The environment variables the plugins behind gateway.ts (and sandbox.ts)
 * declare, read from their manifests without loading their code: what a deploy
 * passes to the release.
 */
export async function gatewayEnvNames(options: Pick<ComposeGatewayOptions, "gateway" | "sandbox" | "agentDir" | "plugins">): Promise<string[]> {
  const gateway = withSandboxFile(options.gateway ?? ({} as GatewayDefinition), options.sandbox);
  const finder = new PluginFinder(resolve(options.agentDir), options.plugins ?? []);
  const names = new Set<string>();
  for (const slot of GATEWAY_SLOTS) {
    const descriptor = gateway[slot];
    if (descriptor === undefined) continue;
    const pkg = await readPluginPackage((await finder.find(descriptor.plugin, slot)).dir);
    for (const variable of pkg.manifest.env ?? []) names.add(variable.name);
  }
  return [...names].sort();
}

function missingVariables(slots: ComposedSlot[], env: Record<string, string | undefined>): MissingEnvVar[] {
  const missing = new Map<string, MissingEnvVar>();
  for (const { slot, plugin } of slots) {
    for (const variable of plugin.manifest.env ?? []) {
      if (!variable.required || (env[variable.name] ?? "") !== "") continue;
      const key = `${plugin.manifest.id}:${variable.name}`;
      const entry = missing.get(key) ?? { name: variable.name, plugin: plugin.manifest.id, slots: [], ...(variable.description ? { description: variable.description } : {}) };
      entry.slots.push(slot);
      missing.set(key, entry);
    }
  }
  return [...missing.values()];
}

/** Finds installed plugin packages by id, scanning once, nearest first. */
class PluginFinder {
  private scanned: Promise<DiscoveredPlugin[]> | undefined;

  constructor(
    private readonly agentDir: string,
    private readonly explicit: string[],
  ) {}

  private all(): Promise<DiscoveredPlugin[]> {
    this.scanned ??= (async () => {
      // An explicit folder must be a plugin: read it strictly rather than skip it.
      const explicit = await Promise.all(
        this.explicit.map(async (dir) => {
          const pkg = await readPluginPackage(dir);
          return { dir: await realpath(pkg.dir), packageName: pkg.packageName, id: pkg.manifest.id };
        }),
      );
      const found: DiscoveredPlugin[] = [...explicit];
      found.push(...(await scanInstalledPlugins(this.agentDir)), ...(await scanInstalledPlugins(REGISTRY_DIR)));
      const seen = new Set<string>();
      return found.filter((pkg) => !seen.has(pkg.dir) && seen.add(pkg.dir));
    })();
    return this.scanned;
  }

  async find(id: string, slot: GatewaySlot): Promise<DiscoveredPlugin> {
    const matches = (await this.all()).filter((pkg) => pkg.id === id);
    const [nearest] = matches;
    if (!nearest) {
      const listed = await readRegistryIndex().then((index) => index.plugins[id]?.package, () => undefined);
      throw new AssemblyLineError("AL_ERR_PLUGIN_NOT_FOUND", `gateway.ts ${slot}: no installed package declares the plugin id "${id}" (looked from ${this.agentDir} up and beside the host)`, {
        fix: listed ? `Install it: assembly-line plugins add ${id} (npm package ${listed}).` : `Install the package that provides "${id}" (assembly-line plugins search ${slot}), or fix the name in gateway.ts.`,
      });
    }
    const other = matches.find((pkg) => pkg.packageName !== nearest.packageName);
    if (other) {
      throw new AssemblyLineError("AL_ERR_PLUGIN_DUPLICATE_ID", `two different packages declare the plugin id "${id}": ${nearest.packageName} (${nearest.dir}) and ${other.packageName} (${other.dir})`, {
        fix: `Uninstall one of them; a plugin id names exactly one package.`,
      });
    }
    return nearest;
  }
}
