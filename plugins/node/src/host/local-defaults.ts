import { resolve } from "node:path";
import type { BlobStore, PluginKernel, SandboxAdapter, StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter, LocalBlobStore, LocalSandboxAdapter } from "@assemblyline-agents/local";
import { piAgentHarness, type PiModelCatalog } from "@assemblyline-agents/pi";
import { composeGateway, useKernelHost } from "@assemblyline-agents/registry";
import { kernelHost, type RuntimeBundle } from "@assemblyline-agents/runtime";

// gateway.ts plugins are loaded against this host's kernel.
useKernelHost(kernelHost);

export interface HostAdapters {
  agentDir: string;
  state: StateAdapter;
  blob: BlobStore;
  sandbox: SandboxAdapter;
  defaultHarness: ReturnType<typeof piAgentHarness>;
  /** The kernel the gateway's plugins tapped, when the agent has a gateway.ts. */
  kernel?: PluginKernel;
  /** Close what the gateway opened (the runtime closes the state it was given). */
  close(): Promise<void>;
}

/** Whether the agent chooses any adapter beyond the embedded defaults. */
export function needsComposition(bundle: RuntimeBundle): boolean {
  return bundle.sourceBundle.gateway !== null || (bundle.manifest.sandbox !== null && bundle.manifest.sandbox.adapter !== "local");
}

/**
 * The adapters a host runs an agent on: what gateway.ts chooses (each plugin
 * loaded and checked, required env enforced in production), and for every slot
 * it leaves empty the embedded defaults beside the agent folder: file state,
 * local blobs, a local sandbox; the Pi engine for real models.
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
  const chosen = (composed?.adapters ?? {}) as { state?: StateAdapter; blob?: BlobStore; sandbox?: SandboxAdapter };
  const state = chosen.state ?? (await FileStateAdapter.open(options.stateDir ? { directory: resolve(options.stateDir) } : { agentDir }));
  return {
    agentDir,
    state,
    blob: chosen.blob ?? new LocalBlobStore({ agentDir }),
    sandbox: chosen.sandbox ?? new LocalSandboxAdapter({ agentDir }),
    defaultHarness: piAgentHarness({ ...(options.models ? { models: options.models } : {}) }),
    ...(composed ? { kernel: composed.kernel } : {}),
    close: async () => {
      await composed?.close();
    },
  };
}
