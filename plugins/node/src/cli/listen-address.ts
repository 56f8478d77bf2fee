import { AssemblyLineError, type PluginKernel } from "@assemblyline-agents/core";
import { kernelHost, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { NODE_PLUGIN_ID, type NodeRuntimeSlotOptions } from "../plugin.js";

/*
 * Where `dev` and `start` listen, the first of these that is set, for the port
 * and the host separately:
 *   1. --port / --host (the project config's host.port / host.host fill these flags)
 *   2. PORT / HOST (what docker, fly, railway and the vps target give a release)
 *   3. gateway.ts's runtime: nodeRuntime({ port, host })
 *   4. the host's default: 3000; 127.0.0.1 in dev, 0.0.0.0 in production
 * Steps 2 and 4 are listenNodeRuntime's own, so they are left to it: this
 * passes a port or host only from step 1 or 3.
 */

/** What listenNodeRuntime is given as `port` / `host`. */
export interface ListenAddress {
  port?: number;
  host?: string;
}

/**
 * The listen options of gateway.ts's runtime slot, as the node plugin
 * materialized them on the kernel the gateway was composed on (the registry
 * has checked them against config.schema.json, the plugin again).
 */
export async function gatewayListenOptions(bundle: RuntimeBundle, kernel: PluginKernel | undefined, context: { agentDir: string; devMode: boolean; env: Record<string, string | undefined> }): Promise<NodeRuntimeSlotOptions> {
  const descriptor = bundle.sourceBundle.gateway?.runtime;
  if (descriptor === undefined) return {};
  if (kernel === undefined) {
    throw new AssemblyLineError("AL_ERR_GATEWAY_SLOT", `gateway.ts chooses runtime "${descriptor.plugin}", but the gateway was not composed`, {
      fix: "This is a bug in the host: gateway.ts's plugins must be composed before it listens.",
    });
  }
  const runtime = (await kernelHost.materializeSlot(kernel, descriptor, { ...context, slot: "runtime" })) as { name?: unknown; options?: NodeRuntimeSlotOptions } | undefined;
  if (runtime?.name !== NODE_PLUGIN_ID) {
    throw new AssemblyLineError("AL_ERR_GATEWAY_SLOT", `gateway.ts chooses runtime "${descriptor.plugin}", but \`assembly-line dev\` and \`start\` serve the agent with the Node host`, {
      fix: 'Use runtime: nodeRuntime() (or adapter("node")) in gateway.ts, or serve the agent with the host of the runtime it names.',
      details: { slot: "runtime", plugin: descriptor.plugin },
    });
  }
  return runtime.options ?? {};
}

/** The port and host to pass on: the flag's, else (when PORT / HOST is unset) the gateway's. */
export function listenAddress(flags: { port: number | undefined; host: string | undefined }, env: Record<string, string | undefined>, gateway: NodeRuntimeSlotOptions): ListenAddress {
  // As listenNodeRuntime reads them: a blank PORT or an empty HOST is unset.
  const port = flags.port ?? ((env.PORT ?? "").trim() !== "" ? undefined : gateway.port);
  const host = flags.host ?? (env.HOST ? undefined : gateway.host);
  return { ...(port !== undefined ? { port } : {}), ...(host !== undefined ? { host } : {}) };
}

