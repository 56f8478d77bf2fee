import { resolve } from "node:path";
import { isScheduleStateStore, type AgentHarness, type BlobStore, type ConnectionProvider, type PluginKernel, type SandboxAdapter, type Scheduler, type StateAdapter } from "@assemblyline-agents/core";
import { LocalScheduler } from "@assemblyline-agents/local";
import { localState } from "./default-state.js";
import { embeddedBlobs } from "./embedded-blobs.js";
import { embeddedSandbox } from "./embedded-sandbox.js";
import type { PiModelCatalog } from "@assemblyline-agents/pi";
import { composeGateway, useKernelHost } from "@assemblyline-agents/registry";
import { kernelHost, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { defaultPiHarness } from "../pi-engine.js";
import { hostConnections } from "./host-connections.js";
import { needsComposition } from "./needs-composition.js";

// gateway.ts plugins are loaded against this host's kernel.
useKernelHost(kernelHost);

export interface HostAdapters {
  agentDir: string;
  state: StateAdapter;
  blob: BlobStore;
  sandbox: SandboxAdapter;
  /** gateway.ts scheduler, else the local scheduler over the state's schedules facet (none when the state has no such facet). */
  scheduler?: Scheduler;
  /** MCP/OpenAPI/HTTP connections, when the agent has connections/ or dynamic connections. */
  connections?: ConnectionProvider;
  defaultHarness: AgentHarness;
  /** The kernel the gateway's plugins tapped, when the agent has a gateway.ts. */
  kernel?: PluginKernel;
  /** Close what the gateway opened (the runtime closes the state it was given). */
  close(): Promise<void>;
}

export { needsComposition } from "./needs-composition.js";

/**
 * The adapters a host runs an agent on: what gateway.ts chooses (each plugin
 * loaded and checked, required env enforced in production), and for every slot
 * it leaves empty the embedded defaults: file state, local blobs, a local sandbox,
 * the local scheduler; the Pi engine for real models. Their files are beside the
 * agent folder, or with a state folder in it (blobs/, sandboxes/), so that a new
 * release of the agent in another folder resumes paused runs with their files.
 */
export async function openLocalDefaults(
  bundle: RuntimeBundle,
  options: { stateDir?: string; models?: PiModelCatalog; devMode?: boolean } = {},
): Promise<HostAdapters> {
  const agentDir = resolve(bundle.artifactRoot, bundle.manifest.sourceRoot);
  // gateway.ts, and a non-local sandbox.ts, choose adapters through the installed plugins.
  const composed = needsComposition(bundle)
    ? await composeGateway({ gateway: bundle.sourceBundle.gateway, sandbox: bundle.manifest.sandbox, agentDir, devMode: options.devMode ?? false })
    : undefined;
  const chosen = (composed?.adapters ?? {}) as { state?: StateAdapter; blob?: BlobStore; sandbox?: SandboxAdapter; scheduler?: Scheduler };
  const state = await localState(chosen.state, { stateDir: options.stateDir, agentDir, bundle });
  const connections = hostConnections(bundle, agentDir);
  const scheduler = chosen.scheduler ?? (isScheduleStateStore(state) ? new LocalScheduler({ store: state }) : undefined);
  return {
    agentDir,
    state,
    blob: chosen.blob ?? embeddedBlobs(agentDir, options.stateDir),
    sandbox: chosen.sandbox ?? embeddedSandbox(bundle, agentDir, options.stateDir),
    ...(scheduler ? { scheduler } : {}),
    ...(connections ? { connections } : {}),
    defaultHarness: await defaultPiHarness(options.models),
    ...(composed ? { kernel: composed.kernel } : {}),
    close: async () => {
      await composed?.close();
    },
  };
}
