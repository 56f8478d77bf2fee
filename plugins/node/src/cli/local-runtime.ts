import { join, resolve } from "node:path";
import { AssemblyLineError, isAssemblyLineError, type BlobStore, type RunEvent, type RuntimeLogger, type SandboxAdapter, type StateAdapter } from "@assemblyline-agents/core";
import { needsComposition } from "../host/needs-composition.js";
import { localState } from "../host/default-state.js";
import { embeddedBlobs } from "../host/embedded-blobs.js";
import { embeddedSandbox } from "../host/embedded-sandbox.js";
import type { PiModelCatalog } from "@assemblyline-agents/pi";
import { hostConnections } from "../host/host-connections.js";
import { ARTIFACT_DIR, OpenEveRuntime, buildAgent, kernelHost, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { defaultPiHarness, loadPi } from "../pi-engine.js";
import { servedByBuiltInRoute, withBuiltInModelRoutes } from "../host/model-routes.js";
import { exitBoundedSink } from "./exit-telemetry.js";
import { stoppedDrivingARun } from "./interrupt.js";

/**
 * The registry, loaded when an agent composes plugins (gateway.ts, a sandbox.ts
 * adapter): an agent on the embedded defaults never pays for it. Its plugins are
 * loaded against this host's kernel.
 */
async function registry() {
  const loaded = await import("@assemblyline-agents/registry");
  loaded.useKernelHost(kernelHost);
  return loaded;
}

/** The build's check that sandbox.ts's adapter plugin is installed, through the lazily loaded registry. */
export const checkSandboxAdapter = async (adapter: string, agentDir: string): Promise<void> => (await registry()).checkSandboxAdapterInstalled(adapter, agentDir);

/** How the command line chooses a model: a spec, and optionally where it is served. */
export interface ModelFlags {
  model?: string;
  /** An OpenAI- or Anthropic-compatible server, e.g. http://127.0.0.1:11434/v1. */
  baseUrl?: string;
  /** The server's wire API; default: the catalog's, or openai-completions for a model it does not know. */
  api?: string;
  /** The project config, not the command line, gave baseUrl: it is set aside for a scripted agent.ts model, as approve sets it aside for a scripted run. */
  baseUrlFromConfig?: boolean;
}

/** The catalog a runtime serves its runs' models with, or how to make it from agent.ts's model once the build has read it. */
export type ModelCatalogSource = PiModelCatalog | ((agentModel: string) => Promise<PiModelCatalog | undefined>);

/**
 * The pi catalog entry `--base-url` (or the config's `baseUrl`) implies, if any: it serves the
 * model new runs use, --model's, else agent.ts's (`agentModel`). Before the build has read
 * agent.ts, without --model, there is nothing to serve yet: undefined, and asked again with it.
 */
export async function catalogFor(flags: ModelFlags, agentModel: string | undefined): Promise<PiModelCatalog | undefined> {
  if (!flags.baseUrl) return undefined;
  const model = flags.model ?? agentModel;
  if (model === undefined) return undefined;
  if (model.startsWith("scripted:")) {
    if (flags.model === undefined && flags.baseUrlFromConfig) return undefined;
    const named = flags.baseUrlFromConfig ? `the config's baseUrl ${flags.baseUrl}` : `--base-url ${flags.baseUrl}`;
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${named} serves the model runs use, but that is the scripted model ${model}${flags.model === undefined ? " (agent.ts's)" : ""}, which no server serves`, {
      fix: "Give a provider/model to serve, e.g. --model local/llama3 --base-url http://127.0.0.1:11434/v1, or leave --base-url out.",
    });
  }
  const { resolvePiModel } = await loadPi();
  let known = false;
  try {
    resolvePiModel(model);
    known = true;
  } catch {
    known = false;
  }
  const api = flags.api ?? (known ? undefined : "openai-completions");
  return { [model]: { baseUrl: flags.baseUrl, ...(api ? { api: api as never } : {}), ...(known ? {} : { apiKeyEnv: false }) } };
}

/** Which model a run uses, and why, when the reader gave no --model. */
export async function chooseModel(agentModel: string, flags: ModelFlags & { offlineScript?: string }): Promise<{ model?: string; note: string }> {
  if (flags.model) {
    return { model: scriptedPath(flags.model), note: `model ${flags.model}${flags.baseUrl ? ` at ${flags.baseUrl}` : ""}` };
  }
  if (!flags.offlineScript) return { note: `model ${agentModel}${flags.baseUrl && !agentModel.startsWith("scripted:") ? ` at ${flags.baseUrl}` : ""}` };
  if (servedByBuiltInRoute(agentModel)) return { note: `model ${agentModel} (the Codex CLI's login session)` };
  try {
    const { resolvePiApiKey, resolvePiModel } = await loadPi();
    const model = resolvePiModel(agentModel);
    resolvePiApiKey(agentModel, model, {});
    return { note: `model ${agentModel} (its API key is set)` };
  } catch (error) {
    const why = error instanceof Error ? error.message.split("\n")[0]!.replace(/^AL_ERR_\w+: /, "") : String(error);
    return { model: `scripted:${resolve(flags.offlineScript)}`, note: `scripted conversation ${flags.offlineScript} (${why})` };
  }
}

/** A static model in agent.ts must exist in the engine's catalog: caught at build, not at the first run. */
export function staticModelCheck(models: PiModelCatalog | undefined): (modelSpec: string) => Promise<void> {
  return async (modelSpec) => {
    if (modelSpec.startsWith("scripted:") || servedByBuiltInRoute(modelSpec)) return;
    const pi = await loadPi().catch((error: unknown) => {
      // Without the Pi engine installed there is no catalog to check against; a run that needs it says how to install it.
      if (isAssemblyLineError(error, "AL_ERR_HARNESS")) return undefined;
      throw error;
    });
    pi?.resolvePiModel(modelSpec, models);
  };
}

function connectionsFor(bundle: RuntimeBundle, agentDir: string) {
  const connections = hostConnections(bundle, agentDir);
  return connections ? { connections } : {};
}

function scriptedPath(model: string): string {
  return model.startsWith("scripted:") ? `scripted:${resolve(model.slice("scripted:".length))}` : model;
}

export interface LocalRuntime {
  runtime: OpenEveRuntime;
  bundle: RuntimeBundle;
  close(): Promise<void>;
}

/**
 * The embedded defaults: file state, local blobs and a local sandbox under
 * `<agentDir>/.assembly-line/` (or in `stateDir`, see openLocalDefaults), the Pi engine for real models.
 */
export async function openLocalRuntime(options: {
  agentDir: string;
  /** Rebuild the manifest first (run); approvals and resumes use the build that paused the run. */
  build: boolean;
  stateDir?: string;
  /** The catalog entries that serve the runs' models (--base-url), or how to make them from agent.ts's model. */
  models?: ModelCatalogSource;
  onEvent?: (event: RunEvent) => void;
  onTextDelta?: (runId: string, delta: string) => void;
  onTextRestart?: (runId: string) => void;
  /** The runtime's logger (default: JSON lines on stderr); commands that print a timeline pass a readable one. */
  logger?: RuntimeLogger;
  /** Dev mode warns about missing plugin env variables instead of refusing to boot. Default true. */
  devMode?: boolean;
  /**
   * Check agent.ts's model against the engine's catalog while building. Default true. A run
   * given its model on the command line does not use that one, and skips loading the catalog
   * (thousands of modules) for it; `build`, `dev` and `deploy` still check it.
   */
  checkAgentModel?: boolean;
}): Promise<LocalRuntime> {
  const agentDir = resolve(options.agentDir);
  const catalogOf = async (agentModel: string) => (typeof options.models === "function" ? options.models(agentModel) : options.models);
  const validateModel = options.checkAgentModel === false ? undefined : async (modelSpec: string) => staticModelCheck(await catalogOf(modelSpec))(modelSpec);
  const artifactRoot = options.build ? (await buildAgent(agentDir, { ...(validateModel ? { validateModel } : {}), checkSandboxAdapter })).artifactRoot : join(agentDir, ARTIFACT_DIR);
  const bundle = await loadRuntimeBundle(artifactRoot);
  const models = await catalogOf(bundle.manifest.agent.model);
  // gateway.ts chooses adapters per slot; the slots it leaves empty get the embedded defaults.
  const composed = needsComposition(bundle)
    ? await (await registry()).composeGateway({ gateway: bundle.sourceBundle.gateway, sandbox: bundle.manifest.sandbox, agentDir, devMode: options.devMode ?? true })
    : undefined;
  const adapters = (composed?.adapters ?? {}) as { state?: StateAdapter; blob?: BlobStore; sandbox?: SandboxAdapter };
  const state = await localState(adapters.state, { stateDir: options.stateDir, agentDir, bundle });
  const sink = bundle.instrumentation?.sink;
  const runtime = new OpenEveRuntime({
    ...bundle,
    ...(sink ? { instrumentation: { ...bundle.instrumentation!, sink: exitBoundedSink(sink) } } : {}),
    state,
    ...(composed ? { kernel: composed.kernel } : {}),
    blob: adapters.blob ?? embeddedBlobs(agentDir, options.stateDir),
    sandbox: adapters.sandbox ?? embeddedSandbox(bundle, agentDir, options.stateDir),
    defaultHarness: await defaultPiHarness(models),
    ...(connectionsFor(bundle, agentDir)),
    modelHarnesses: withBuiltInModelRoutes(undefined, process.env),
    ...(options.onTextDelta ? { onTextDelta: options.onTextDelta } : {}),
    ...(options.onTextRestart ? { onTextRestart: options.onTextRestart } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  // A fresh build may leave earlier ones that no unfinished run needs any more.
  if (options.build) await runtime.pruneRevisions().catch((error) => runtime.logger.warn({ err: String(error) }, "pruning kept builds failed"));
  // A process stopped between a run's end and its sandbox's release left that sandbox behind.
  if (options.build) await runtime.releaseFinishedSandboxes().catch((error) => runtime.logger.warn({ err: String(error) }, "releasing finished runs' sandboxes failed"));
  if (options.onEvent) {
    const onEvent = options.onEvent;
    runtime.hooks.event.tap("cli-timeline", (event) => onEvent(event));
  }
  return {
    runtime,
    bundle,
    close: async () => {
      // A signal stopped the command mid-run: closing would wait for the turn to end. The process ends instead, the run left for resume.
      if (stoppedDrivingARun()) return void (await runtime.flushTelemetry().catch(() => undefined));
      // A run this command paused holds its build against pruning by runtimes on other state stores (pruning holds them).
      if (options.build) await runtime.pruneRevisions().catch((error) => runtime.logger.warn({ err: String(error) }, "pruning kept builds failed"));
      await runtime.close();
      await composed?.close();
    },
  };
}
