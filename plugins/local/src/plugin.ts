import { readFileSync } from "node:fs";
import { adapterDescriptor, definePlugin, isSandboxSessionStore, isScheduleStateStore, type AdapterDescriptor, type SlotContext } from "@assemblyline-agents/core";
import { LocalBlobStore, type LocalBlobStoreOptions } from "./blob/local-blob-store.js";
import { FileStateAdapter, type FileStateAdapterOptions } from "./state/file-state.js";
import { LocalDeployTarget, type LocalDeployTargetOptions } from "./deploy/local-deploy-target.js";
import { LocalSandboxAdapter, type LocalSandboxAdapterOptions } from "./sandbox/local-sandbox-adapter.js";
import { LocalScheduler, type LocalSchedulerOptions } from "./scheduler/local-scheduler.js";

/** The id of this package's assemblyLine manifest; descriptors name it in `plugin`. */
export const LOCAL_PLUGIN_ID = "local";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

export type LocalStateOptions = FileStateAdapterOptions;
export type LocalBlobOptions = LocalBlobStoreOptions;

/**
 * `state: localState()` in gateway.ts: crash-safe file state under
 * `<agentDir>/.assembly-line/state` (or `directory`). Single-writer: a second live
 * process on the same folder fails at boot with AL_ERR_STATE_LOCKED.
 */
export function localState(options: LocalStateOptions = {}): AdapterDescriptor<"state", LocalStateOptions> {
  return adapterDescriptor("state", LOCAL_PLUGIN_ID, options);
}

/** `blob: localBlob()` in gateway.ts: blobs as files under `<agentDir>/.assembly-line/blobs` (or `directory`). */
export function localBlob(options: LocalBlobOptions = {}): AdapterDescriptor<"blob", LocalBlobOptions> {
  return adapterDescriptor("blob", LOCAL_PLUGIN_ID, options);
}

/** Descriptor options are data from gateway.ts; live collaborators (stores, loggers) come from the host. */
export type LocalSandboxOptions = Omit<LocalSandboxAdapterOptions, "sessions">;
export type LocalSchedulerSlotOptions = Pick<LocalSchedulerOptions, "pollIntervalMs" | "leaseMs" | "batchSize" | "owner">;
export type LocalDeployOptions = LocalDeployTargetOptions;

/**
 * `sandbox: localSandbox()` in gateway.ts: the trusted temp-dir emulation of
 * /workspace under `<agentDir>/.assembly-line/sandboxes` (or `root`). Commands see
 * the host folder, not a literal /workspace; use dockerSandbox() for parity.
 */
export function localSandbox(options: LocalSandboxOptions = {}): AdapterDescriptor<"sandbox", LocalSandboxOptions> {
  return adapterDescriptor("sandbox", LOCAL_PLUGIN_ID, options);
}

/** `scheduler: localScheduler()` in gateway.ts: polls the gateway's state for due schedules. */
export function localScheduler(options: LocalSchedulerSlotOptions = {}): AdapterDescriptor<"scheduler", LocalSchedulerSlotOptions> {
  return adapterDescriptor("scheduler", LOCAL_PLUGIN_ID, options);
}

/** `deploy: localDeploy()` in gateway.ts: copies the built revision to `<agentDir>/.assembly-line-deployments/<revision>`. */
export function localDeploy(options: LocalDeployOptions = {}): AdapterDescriptor<"deploy", LocalDeployOptions> {
  return adapterDescriptor("deploy", LOCAL_PLUGIN_ID, options);
}

const isLocal = (descriptor: AdapterDescriptor): boolean => descriptor.plugin === LOCAL_PLUGIN_ID;

/**
 * The state adapter materialized before this slot, when the kernel passes it on
 * (state precedes sandbox and scheduler in GATEWAY_SLOTS order).
 */
const earlierState = (context: SlotContext): unknown => (context as SlotContext & { state?: unknown }).state;

/** Adapters keep their files beside the agent unless the options name a folder. */
const besideAgent = (context: SlotContext) => (context.agentDir === undefined ? {} : { agentDir: context.agentDir });

/**
 * The embedded defaults as a kernel plugin: one hooks.slot tap per slot, each
 * materializing this package's descriptors (`localState()`, `adapter("local")`)
 * and passing on any other plugin's.
 */
export const plugin = definePlugin({
  name: LOCAL_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("state").tapPromise({ name: LOCAL_PLUGIN_ID }, async (descriptor, context) =>
      // Opened here so a locked or unreadable folder fails the boot, not the first run.
      isLocal(descriptor) ? FileStateAdapter.open({ ...besideAgent(context), ...(descriptor.options as LocalStateOptions) }) : undefined,
    );
    kernel.hooks.slot.for("blob").tapPromise({ name: LOCAL_PLUGIN_ID }, async (descriptor, context) =>
      isLocal(descriptor) ? new LocalBlobStore({ ...besideAgent(context), ...(descriptor.options as LocalBlobOptions) }) : undefined,
    );
    kernel.hooks.slot.for("sandbox").tapPromise({ name: LOCAL_PLUGIN_ID }, async (descriptor, context) => {
      if (!isLocal(descriptor)) return undefined;
      const state = earlierState(context);
      const sessions = isSandboxSessionStore(state) ? { sessions: state } : {};
      return new LocalSandboxAdapter({ ...besideAgent(context), ...(descriptor.options as LocalSandboxOptions), ...sessions });
    });
    kernel.hooks.slot.for("scheduler").tapPromise({ name: LOCAL_PLUGIN_ID }, async (descriptor, context) => {
      if (!isLocal(descriptor)) return undefined;
      // Resolved at start(): a state without the schedules facet fails there with AL_ERR_GATEWAY_SLOT.
      const store = () => {
        const state = earlierState(context);
        return isScheduleStateStore(state) ? state : undefined;
      };
      // Made without a logger (a slot has none): it logs failed dispatches and claims to the logger the host
      // passes to start(), and checks its lease against the automationCatchUpMs passed there.
      return new LocalScheduler({ ...(descriptor.options as LocalSchedulerSlotOptions), store });
    });
    kernel.hooks.slot.for("deploy").tapPromise({ name: LOCAL_PLUGIN_ID }, async (descriptor) =>
      isLocal(descriptor) ? new LocalDeployTarget(descriptor.options as LocalDeployOptions) : undefined,
    );
  },
});
