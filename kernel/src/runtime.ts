import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import {
  AssemblyLineError,
  MAX_TIMER_MS,
  isAssemblyLineError,
  isTimerDelay,
  withinTimeout,
  type AgentHarness,
  type BlobStore,
  type ConnectionProvider,
  type CreatedRun,
  type CreateRunOptions,
  type CoreToolPolicy,
  type JsonValue,
  type PluginKernel,
  type EventContext,
  type RunEvent,
  type RunListFilter,
  type RunRecord,
  type Sandbox,
  type RuntimeLogger,
  type SandboxAdapter,
  type StateAdapter,
  type StateStores,
  type RunBudgets,
  type TelemetrySink,
  isoTimestamp,
  isLeaseFree,
  isRunOfAgent,
} from "@assemblyline-agents/core";
import type { ActiveInstrumentation } from "./telemetry/instrumentation.js";
import { Tracer } from "./telemetry/tracer.js";
import type { SourceBundle } from "./compiler/bundle.js";
import type { AgentManifest } from "./compiler/manifest.js";
import { SCRIPTED_PREFIX, loadModelScript, scriptedHarness } from "./harness/scripted.js";
import { loadDefaultEngine } from "./harness/default-engine.js";
import { STAGE, createKernelHooks, type KernelHooks } from "./hooks.js";
import type { Kernel } from "./kernel.js";
import { agentConversations } from "./state/agent-conversations.js";
import { createRuntimeLogger } from "./logger.js";
import { Admission } from "./run/admission.js";
import { budgetPauseEventOf, budgetPauseOf, decideBudgetPause } from "./run/budget.js";
import { RunJournal } from "./run/journal.js";
import { RunDriver } from "./run/run-driver.js";
import { RevisionDrivers } from "./run/revision-drivers.js";
import { describeRun, pausedChildren, waitingRunsOf, type PausedChild, type PendingApproval, type PendingQuestion, type RunResult } from "./run/run-result.js";
import { ToolTable, buildToolTable, defaultToolsProblem, mergeToolPolicy } from "./run/tool-table.js";
import { refuseUnknownPolicyTools } from "./run/tool-policy.js";
import { resolveState, type ResolvedState } from "./state/resolve-state.js";
import { createMemoryApi } from "./state/memory-api.js";
import { createRuntimeFilesystem } from "./filesystem/runtime-filesystem.js";
import { RunServicesRecord, type RunServices } from "./run/run-scope.js";
import { buildAgentProfiles, connectionsOf, narrowConnectionTools, profileOfRun, refuseUnknownSubagentConnections, subagentIdsOf, type AgentProfile } from "./agents/agent-profile.js";
import { SkillLibrary, type SkillWriteGate, type SkillWriteResult } from "./skills/skill-library.js";
import { skillChangeSteps, type SkillChangeSteps } from "./skills/durable-skill-change.js";
import { holdForStep } from "./run/step.js";
import { skillWriteGate } from "./skills/write-approval.js";
import { createSelfImprovementApi } from "./skills/self-improvement-api.js";
import { DEFAULT_SUBAGENT_LIMITS, checkSubagentLimitsOption, type SubagentLimits } from "./subagents/limits.js";
import { spawnSubagent, type SpawnerParts } from "./subagents/spawner.js";
import { endedChildRefusal } from "./subagents/ended-child.js";
import { StrandedParentSweep } from "./subagents/stranded-parents.js";
import { endedAncestorOf, failLeftDescendants, failLeftUnder, failRunsUnderEndedAncestors, pauseDeniedError, type LeftRunParts } from "./subagents/left-children.js";
import { Automations } from "./automations/automations.js";
import { createAutomationManager } from "./automations/automation-manager.js";
import { ConnectionRegistry } from "./connections/connection-registry.js";

export interface RuntimeOptions {
  manifest: AgentManifest;
  sourceBundle: SourceBundle;
  /** Module-resolution hint for packaged dependencies (from loadRuntimeBundle). */
  artifactRoot?: string;
  /** A full StateAdapter or a StateStores object (`runs` required); in-memory when omitted. */
  state?: StateAdapter | StateStores;
  /** One engine for every run; overrides everything else. */
  agentHarness?: AgentHarness;
  /** Host-owned provider-prefix routes (`{ "openai-codex": codexHarness }`), chosen from the persisted model spec. */
  modelHarnesses?: Record<string, AgentHarness>;
  /** The engine for specs no route claims; Pi (`@assemblyline-agents/pi`, loaded on first use) when omitted. */
  defaultHarness?: AgentHarness;
  /** A pi model catalog forwarded to the default engine, `piAgentHarness({ models })`. */
  models?: Record<string, unknown>;
  /** Ceilings over agent.ts `budgets` (the lower limit wins); defaults stop a runaway loop. */
  budgets?: RunBudgets;
  /** Per-tool host policy; wins over agent.ts and ASSEMBLY_LINE_BASH_TOOL_MODE. */
  coreToolPolicy?: CoreToolPolicy;
  /** Brand-new runs executing at once (env ASSEMBLY_LINE_MAX_CONCURRENT_RUNS, default 16). */
  maxConcurrentRuns?: number;
  /** Brand-new runs waiting for a slot before RunCapacityError (env ASSEMBLY_LINE_MAX_QUEUED_RUNS, default 16). */
  maxQueuedRuns?: number;
  logger?: RuntimeLogger;
  sandbox?: SandboxAdapter;
  blob?: BlobStore;
  /**
   * The host's own clients and handles (a database pool, an API client, a
   * feature-flag reader), given to every tool call as `ctx.resources`, the
   * root's and its subagents' alike. Not persisted: each process passes its own.
   */
  resources?: Record<string, unknown>;
  /**
   * A kernel whose plugins already tapped its hooks (`createKernel({ plugins })`); a bare one by default.
   * One kernel per runtime: the runtime taps it too, for good, and a second runtime given it is refused (AL_ERR_KERNEL_IN_USE).
   */
  kernel?: PluginKernel;
  /** This replica's lease owner id; unique per process by default. */
  ownerId?: string;
  /** How long a run lease lasts without a heartbeat (default 30 s). */
  leaseTtlMs?: number;
  env?: Record<string, string | undefined>;
  /** Streamed text as engines produce it (not durable). */
  onTextDelta?(runId: string, delta: string): void;
  /** The text streamed so far for the run's reply is void: the engine asks again (its provider failed part way) and the reply streams from its start. */
  onTextRestart?(runId: string): void;
  /**
   * Whether a run that came from `channel` owes it its reply through the delivery
   * outbox: a delivery row, written with `run.completed`, that a host sends with the
   * channel's `deliver()`. Default: every channel does. `listenNodeRuntime` answers
   * from its channel modules: a channel without `deliver()` (a raw route, whose
   * caller reads the reply from the run) owes none.
   */
  owesDelivery?(channel: string): boolean;
  /**
   * Whether a run that came from `channel` and failed owes it a failure delivery: a delivery row
   * (payload `{ runId, outcome: "failed", code }`), written with `run.failed`, that a host sends with
   * the channel's `deliverFailure()`. Default: none. `listenNodeRuntime` answers from its channel
   * modules: those with `deliverFailure()`.
   */
  owesFailureDelivery?(channel: string): boolean;
  /** Subagent spawning limits (env ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH, ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS; defaults 3 and 16). */
  subagents?: Partial<SubagentLimits>;
  /**
   * Automation due times missed by at most this many ms each still run; older
   * ones (the host was down) collapse into one run. Default 180 000.
   */
  automationCatchUpMs?: number;
  /**
   * How long a `hooks/` handler may take for one event before it counts as failed (`hook.failed`,
   * and the run goes on without waiting for it further). Default 10 000.
   */
  hookTimeoutMs?: number;
  /**
   * How long resolvers.ts (with plugins' `resolveRun` taps) may take for one run before
   * the run fails with AL_ERR_RESOLVER_FAILED: a resolver is load-bearing, and one that
   * never settles must not hold its run, the run's lease and its slot for good. Default 30 000.
   */
  resolverTimeoutMs?: number;
  /**
   * MCP, OpenAPI and HTTP connections as tools (`createConnections()` from
   * @assemblyline-agents/connections): host-declared ones, and dynamic ones
   * when agent.ts enables them. Without it, connections are unavailable.
   */
  connections?: ConnectionProvider;
  /** instrumentation.ts after setup (from loadRuntimeBundle): its captureContent, service name and sink. */
  instrumentation?: ActiveInstrumentation;
  /** More sinks, e.g. a host's; they get the same spans, under the same captureContent. */
  telemetry?: TelemetrySink | TelemetrySink[];
}

export interface RunAgentOptions {
  message: string;
  conversationId?: string;
  metadata?: Record<string, JsonValue>;
  /** Host-forced model; wins over resolvers and agent.ts. */
  model?: string;
  /** Dedupe key (e.g. a provider event id): the same key starts one run. */
  idempotencyKey?: string;
  /** The channel that produced the turn; `delivery` is for its `deliver()` only (`RunInput.channel`). */
  channel?: { name: string; metadata?: Record<string, JsonValue>; delivery?: Record<string, JsonValue> };
  signal?: AbortSignal;
}

/** How `submit` accepts a run. */
export interface SubmitOptions {
  /**
   * false: leave telling observers (hooks, telemetry) of `run.created` to the
   * run's first drive, which catches them up from the store under its lease,
   * for a caller that starts the run at once. It saves reading back the run
   * and writing the observers' position. Default true: observers hear of the
   * queued run now.
   */
  observe?: boolean;
}

/** The kernel: runs an agent's manifest durably against a state store. */
export class OpenEveRuntime {
  readonly hooks: KernelHooks;
  readonly manifest: AgentManifest;
  readonly state: ResolvedState;
  readonly logger: RuntimeLogger;
  private readonly driver: RunDriver;
  private readonly admission: Admission;
  private readonly inFlight = new Set<Promise<unknown>>();
  /** The owner this process's run leases carry (`RuntimeOptions.ownerId`, else host:pid:random). */
  readonly ownerId: string;
  /** The agent's automations (static and dynamic) in the schedules facet; hosts run `dispatchDue` from their scheduler. */
  readonly automations: Automations;
  /** The agent's connections (host-declared and dynamic) as tools. */
  readonly connections: ConnectionRegistry;

  constructor(private readonly options: RuntimeOptions) {
    if (!options?.manifest || !options.sourceBundle) {
      throw new AssemblyLineError("AL_ERR_MANIFEST_MISSING", "OpenEveRuntime needs manifest and sourceBundle", {
        fix: "new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state })",
      });
    }
    if (options.resources !== undefined && (typeof options.resources !== "object" || options.resources === null || Array.isArray(options.resources))) {
      throw new AssemblyLineError("AL_ERR_RUNTIME_RESOURCES", `RuntimeOptions.resources must be an object of named handles, not ${options.resources === null ? "null" : Array.isArray(options.resources) ? "an array" : typeof options.resources}`, {
        fix: "Pass resources: { db: pool, crm: client }; tools read them as ctx.resources.db, ctx.resources.crm. Omit it when there are none.",
      });
    }
    // The heartbeat renews a lease every third of it: a delay past a timer's longest fires at once, over and over.
    if (options.leaseTtlMs !== undefined && !(Number.isInteger(options.leaseTtlMs) && isTimerDelay(options.leaseTtlMs))) {
      throw new TypeError(`leaseTtlMs is ${String(options.leaseTtlMs)}; give a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (default 30000)`);
    }
    const subagentLimits = checkSubagentLimitsOption(options.subagents);
    const env = options.env ?? process.env;
    this.manifest = options.manifest;
    this.logger = options.logger ?? createRuntimeLogger({ env });
    this.state = resolveState(options.state, this.logger);
    // Only this kernel's createKernel makes PluginKernels, so its hooks are the kernel's own. Claimed only
    // once every option is checked, just before the first tap: a constructor that refuses its options leaves
    // the kernel free for a retry with fixed ones.
    const kernel = options.kernel as Kernel | undefined;
    if (kernel) refuseClaimedKernel(kernel);
    this.hooks = kernel ? kernel.hooks : createKernelHooks();
    this.ownerId = options.ownerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.admission = new Admission(
      wholeNumberOption(options.maxConcurrentRuns, "maxConcurrentRuns", 1) ?? positiveInt(env.ASSEMBLY_LINE_MAX_CONCURRENT_RUNS, "ASSEMBLY_LINE_MAX_CONCURRENT_RUNS") ?? 16,
      wholeNumberOption(options.maxQueuedRuns, "maxQueuedRuns", 0) ?? positiveInt(env.ASSEMBLY_LINE_MAX_QUEUED_RUNS, "ASSEMBLY_LINE_MAX_QUEUED_RUNS", true) ?? 16,
    );
    this.hookTimeoutMs = this.options.hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
    if (!Number.isInteger(this.hookTimeoutMs) || !isTimerDelay(this.hookTimeoutMs)) {
      throw new TypeError(`hookTimeoutMs is ${String(this.hookTimeoutMs)}; give a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (default ${DEFAULT_HOOK_TIMEOUT_MS})`);
    }
    this.resolverTimeoutMs = this.options.resolverTimeoutMs ?? DEFAULT_RESOLVER_TIMEOUT_MS;
    if (!Number.isInteger(this.resolverTimeoutMs) || !isTimerDelay(this.resolverTimeoutMs)) {
      throw new TypeError(`resolverTimeoutMs is ${String(this.resolverTimeoutMs)}; give a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (default ${DEFAULT_RESOLVER_TIMEOUT_MS})`);
    }
    this.tracer = this.createTracer();

    this.driver = this.createDriver(options, env);
    this.journal = this.driver.journal;
    this.toolTable = this.driver.table;
    this.profiles = this.driver.profiles;
    // Checked against the build this runtime serves only: a build that runs on for its paused runs may
    // lack a tool the host's policy now gates, and its runs must still continue.
    refuseUnknownPolicyTools(mergeToolPolicy(this.manifest.agent.coreToolPolicy, options.coreToolPolicy, env), this.profiles);
    this.connections = new ConnectionRegistry({
      provider: options.connections,
      folder: options.sourceBundle.connections ?? {},
      table: this.toolTable,
      settings: this.state.settings,
      agentId: this.manifest.agent.id,
      dynamic: this.dynamicConnections,
      logger: this.logger,
    });
    refuseUnknownSubagentConnections(
      this.profiles,
      new Set([...Object.keys(options.sourceBundle.connections ?? {}), ...Object.keys(options.connections?.connections ?? {})]),
      this.dynamicConnections.dynamic,
    );
    this.automations = new Automations({
      store: this.state.schedules,
      agentId: this.manifest.agent.id,
      statics: this.manifest.automations ?? [],
      submit: (input) => this.submit(input),
      logger: this.logger,
      ...(options.automationCatchUpMs !== undefined ? { catchUpMs: options.automationCatchUpMs } : {}),
      dynamic: this.manifest.agent.dynamicAutomations?.dynamic ?? false,
    });
    this.subagentLimits = {
      maxDepth: subagentLimits.maxDepth ?? positiveInt(env.ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH, "ASSEMBLY_LINE_SUBAGENT_MAX_DEPTH", true) ?? DEFAULT_SUBAGENT_LIMITS.maxDepth,
      maxSpawnsPerRun: subagentLimits.maxSpawnsPerRun ?? positiveInt(env.ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS, "ASSEMBLY_LINE_SUBAGENT_MAX_SPAWNS", true) ?? DEFAULT_SUBAGENT_LIMITS.maxSpawnsPerRun,
    };

    // Every option checked: from here on the runtime taps its kernel, for good.
    if (kernel) claimedKernels.add(kernel);
    this.tapRoutes();
    this.tapTelemetry();
    this.tapUserHooks(this.manifest.agentRevision, options.sourceBundle.hooks);
    this.revisions = new RevisionDrivers(this.driver, this.manifest.agentRevision, this.state.runs, options.artifactRoot, (bundle) => {
      const driver = this.createDriver(bundle, env);
      this.tapUserHooks(bundle.manifest.agentRevision, bundle.sourceBundle.hooks);
      return driver;
    });
  }

  /** A driver for one build: its tool table, its journal (events carry its revision), its budgets. */
  private createDriver(build: { manifest: AgentManifest; sourceBundle: SourceBundle }, env: Record<string, string | undefined>): RunDriver {
    const { manifest, sourceBundle } = build;
    const toolTableInput = {
      manifest,
      sourceBundle,
      coreToolPolicy: mergeToolPolicy(manifest.agent.coreToolPolicy, this.options.coreToolPolicy, env),
      sandboxAvailable: this.options.sandbox !== undefined,
    };
    const table = this.hooks.tools.call(buildToolTable(toolTableInput), toolTableInput);
    if (!(table instanceof ToolTable)) {
      throw new AssemblyLineError("AL_ERR_HOOK_TAP", "a hooks.tools tap returned something other than the tool table it was given", {
        fix: "Add tools with table.provide(name, definition, { provider }) and return the same table.",
      });
    }
    const listedProblem = manifest.agent.defaultTools ? defaultToolsProblem(table, manifest.agent.defaultTools) : null;
    if (listedProblem) {
      throw new AssemblyLineError("AL_ERR_DEFAULT_TOOL_UNKNOWN", `agent.ts defaultTools: ${listedProblem}`, {
        fix: "List only tools this agent has (built-ins, tools/, plugin-provided) and this host can run; bash needs a sandbox adapter.",
      });
    }
    const profiles = buildAgentProfiles(table, toolTableInput, this.options.budgets);
    let narrowedAt = -1;
    const journal = new RunJournal(
      this.state.runs,
      this.hooks,
      { agentId: manifest.agent.id, agentName: manifest.agent.name, agentRevision: manifest.agentRevision },
      this.logger,
    );
    this.journals.set(manifest.agentRevision, journal);
    // Its runs' subagents run on the same build: a child carries its parent's revision.
    const driver: RunDriver = new RunDriver({
      manifest,
      sourceBundle,
      hooks: this.hooks,
      state: this.state,
      journal,
      profiles,
      skillLibrary: (profile) => this.skillLibrary(profile, manifest.agentRevision),
      logger: this.logger,
      ownerId: this.ownerId,
      leaseTtlMs: this.options.leaseTtlMs ?? 30_000,
      resolverTimeoutMs: this.resolverTimeoutMs,
      selectHarness: (modelSpec, runId) => this.selectHarness(modelSpec, runId),
      services: (run, resumed) =>
        this.servicesFor(run, resumed, {
          manifest,
          profiles,
          journal,
          // A child driven on after a stop is resumed as any run is: recorded, so the time it stood still is not active time.
          drive: (childRunId, options) => driver.drive(childRunId, { ...(options?.signal ? { signal: options.signal } : {}), ...(options?.resumed ? { resumedBy: { recovered: false } } : {}) }),
        }),
      textDelta: (runId, delta) => this.options.onTextDelta?.(runId, delta),
      textRestart: (runId) => this.options.onTextRestart?.(runId),
      owesDelivery: (channel) => this.options.owesDelivery?.(channel) ?? true,
      owesFailureDelivery: (channel) => this.options.owesFailureDelivery?.(channel) ?? false,
      beforeTurn: async () => {
        await this.connections.refresh();
        // Subagents' connection tools are derived from the root table's: made again only once connections changed.
        if (narrowedAt === this.connections.version) return;
        narrowConnectionTools(profiles, this.connections.connections());
        narrowedAt = this.connections.version;
      },
      alwaysOfferDiscovery: this.dynamicConnections.dynamic,
      driveWatch: this.tracer,
      captureContent: this.options.instrumentation?.captureContent,
      driverFor: (run) => this.revisions.driverFor(run),
    });
    return driver;
  }

  private get dynamicConnections(): { dynamic: boolean; approval: boolean; allowedHosts: string[] } {
    return this.manifest.agent.dynamicConnections ?? { dynamic: false, approval: true, allowedHosts: [] };
  }

  private readonly journal: RunJournal;
  private readonly revisions: RevisionDrivers;
  /** The agent's tools after plugins' `tools` taps: what runs may offer and discover. */
  readonly toolTable: ToolTable;
  /** The root agent and its subagents, each with its tool table. */
  readonly profiles: AgentProfile;
  private readonly subagentLimits: SubagentLimits;
  private readonly hookTimeoutMs: number;
  private readonly resolverTimeoutMs: number;
  /** Each loaded build's hooks/ files, by its revision (see tapUserHooks). */
  private readonly hookFiles = new Map<string, SourceBundle["hooks"]>();
  private userHooksTapped = false;
  /** Each loaded build's journal, by its revision: a hook's failure is recorded where that build's delivery of the run picks it up. */
  private readonly journals = new Map<string, RunJournal>();
  /** Spawns under way per parent run (spawner.ts). */
  private readonly spawning = new Map<string, Set<string>>();
  private readonly libraries = new Map<string, SkillLibrary>();

  /** The skills of the root agent (`path` "") or of a subagent (`researcher`, `researcher/fact_checker`). */
  skills(path = ""): SkillLibrary {
    let profile: AgentProfile | undefined = this.profiles;
    for (const name of path ? path.split("/") : []) profile = profile?.subagents.get(name);
    if (!profile) {
      throw new AssemblyLineError("AL_ERR_SUBAGENT_NOT_FOUND", `this agent has no subagent "${path}"`, { fix: "Name a folder path under subagents/, e.g. researcher." });
    }
    return this.skillLibrary(profile);
  }

  private skillLibrary(profile: AgentProfile, agentRevision = this.manifest.agentRevision): SkillLibrary {
    const key = `${agentRevision}:${profile.path}`;
    let library = this.libraries.get(key);
    // Only the library of the build this runtime serves syncs its seeds into the store.
    const currentBuild = agentRevision === this.manifest.agentRevision;
    if (!library) this.libraries.set(key, (library = new SkillLibrary(profile, this.state.skills, agentRevision, this.state.settings, currentBuild)));
    return library;
  }

  private readonly tracer: Tracer | undefined;

  /** Spans go to instrumentation.ts's sink and `telemetry` sinks, unless captureContent is "off". */
  private createTracer(): Tracer | undefined {
    const { instrumentation, telemetry } = this.options;
    const sinks = [...(instrumentation?.sink ? [instrumentation.sink] : []), ...[telemetry ?? []].flat()];
    const captureContent = instrumentation?.captureContent ?? "usage";
    if (captureContent === "off" || sinks.length === 0) return undefined;
    return new Tracer({
      runs: this.state.runs,
      sinks,
      captureContent,
      serviceName: instrumentation?.serviceName ?? this.manifest.agent.id,
      logger: this.logger,
    });
  }

  private tapTelemetry(): void {
    const tracer = this.tracer;
    if (!tracer) return;
    // Last, after hooks/ files: telemetry watches what the application did, it never gates it.
    this.hooks.event.tapPromise({ name: "kernel:telemetry", stage: STAGE.FALLBACK }, (event, context) => tracer.observe(event, context));
  }

  /**
   * Export every span sinks still hold (host shutdown calls this; close() does too).
   * With `timeoutMs`, each sink gets that long and drops what it has not sent by then.
   */
  async flushTelemetry(options: { timeoutMs?: number } = {}): Promise<void> {
    await this.tracer?.flush(options);
  }

  /** Start a brand-new run and drive it until it completes, fails or pauses. */
  async run(input: RunAgentOptions): Promise<RunResult> {
    const started = await this.submitAndStart(input);
    return started.created ? started.result : this.getRun(started.runId);
  }

  /**
   * Accept a run durably without executing it (status `queued`): the durable
   * mailbox of hosts. `start(runId)` executes it later, on any replica.
   */
  async submit(input: RunAgentOptions, options: SubmitOptions = {}): Promise<{ runId: string; created: boolean }> {
    const { run, created } = await this.createRunFor(input);
    if (created && options.observe !== false) await this.journal.observe(run.id);
    return { runId: run.id, created };
  }

  /**
   * submit() and start() in one, for a caller with room to drive the run now:
   * the run is created leased to this process in the same write, as run()
   * creates it, and driven at once, with no read of it and no second write to
   * take its lease. Resolves once the run is stored; `result` settles when the
   * drive ends (completed, failed or paused). A duplicate (its idempotency key
   * started a run before) is not driven: `created` is false. At capacity it
   * waits or refuses (AL_ERR_RUN_CAPACITY) as run() does, before storing anything.
   */
  async submitAndStart(input: RunAgentOptions): Promise<{ runId: string; created: true; result: Promise<RunResult> } | { runId: string; created: false }> {
    const release = await this.admission.acquire();
    let stored: CreatedRun;
    try {
      // Created leased to this process, in one write; the drive observes run.created itself, under the lease.
      stored = await this.track(() => this.createRunFor(input, { lease: { owner: this.ownerId, ttlMs: this.options.leaseTtlMs ?? 30_000 } }));
    } catch (error) {
      release();
      throw error;
    }
    const { run, created, createdEvent } = stored;
    if (!created) {
      release();
      return { runId: run.id, created: false };
    }
    const result = this.track(async () => {
      try {
        return await this.driver.drive(run.id, {
          created: { run, ...(createdEvent ? { event: createdEvent } : {}) },
          ...(input.model ? { forcedModel: input.model } : {}),
          ...(input.signal ? { signal: input.signal } : {}),
        });
      } finally {
        release();
      }
    });
    return { runId: run.id, created: true, result };
  }

  private createRunFor(input: RunAgentOptions, options: CreateRunOptions = {}): Promise<CreatedRun> {
    if (typeof input?.message !== "string") {
      throw new TypeError("runtime.run({ message }): message must be a string");
    }
    return this.state.runs.createRun({
      id: `run_${randomUUID()}`,
      agentId: this.manifest.agent.id,
      agentRevision: this.manifest.agentRevision,
      conversationId: input.conversationId ?? null,
      modelSpec: input.model ?? this.manifest.agent.model,
      input: { message: input.message, metadata: input.metadata ?? {}, ...(input.channel ? { channel: input.channel } : {}), ...(input.model ? { modelForced: true } : {}) },
      ...(input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
    }, options);
  }

  /** Execute a submitted run through admission (RunCapacityError when full). */
  async start(runId: string): Promise<RunResult> {
    const release = await this.admission.acquire();
    return this.track(async () => {
      try {
        const run = await this.requireOwnRun(runId);
        if (run.status !== "queued") return describeRun(this.state.runs, run);
        await this.refuseWhileConversationBusy(run);
        const { driver, revision } = await this.revisions.driverFor(run);
        return await driver.drive(runId, { revision });
      } finally {
        release();
      }
    });
  }


  /**
   * Approve a pending tool call (the only one when `callId` is omitted) and resume the run.
   * The answer comes when the run rests; `onRecorded` is called (it must not throw) as soon as the
   * approval is recorded, before the run goes on, and never when it is refused: a caller that
   * answers before the run rests (an HTTP 202) waits for it, so a refusal is never reported as taken.
   *
   * A run paused on its subagents (`waitingOnAll`) is decided in the subagent run that has the call:
   * `callId` (or the call's `approvalId`) finds it, and `runId`, the pending approval's own, picks it when
   * two subagent runs have a call of that id. Without either, the first of them with a pending approval or budget.
   */
  async approve(runId: string, options: { callId?: string; runId?: string; actor?: string; onRecorded?: () => void } = {}): Promise<RunResult> {
    return this.decide(runId, "approved", options);
  }

  /** Deny a pending tool call; the model receives a denial result and the run resumes. `onRecorded`, `callId` and `runId` as for approve. */
  async deny(runId: string, options: { callId?: string; runId?: string; actor?: string; reason?: string; onRecorded?: () => void } = {}): Promise<RunResult> {
    return this.decide(runId, "denied", options);
  }

  /**
   * Answer a pending question of the run (the only one when `callId` is omitted); the answer becomes
   * that tool call's result. With `callId`, only that question is answered: an answer meant for a
   * question that is no longer pending is refused (AL_ERR_APPROVAL_NOT_FOUND) instead of answering
   * another, and so is one that names none while several are pending (an engine that makes tool calls
   * in parallel can ask more than one). The run goes on once the last is answered.
   * `onRecorded`, and `runId` for a question of a subagent run (`questions`), as for approve.
   */
  async answer(runId: string, answer: string, options: { callId?: string; runId?: string; actor?: string; onRecorded?: () => void } = {}): Promise<RunResult> {
    // Checked before anything: a question is single-use, and an answer that is no text would use it up.
    if (typeof answer !== "string") {
      throw new TypeError(`runtime.answer(runId, answer): answer must be a string, not ${answer === null ? "null" : typeof answer}; the question stays open`);
    }
    options = withoutOwnRunId(runId, options);
    // The questions pending as an answer without a call id arrives, read before anything else is awaited (as
    // decide() reads what a decision was sent for): queued behind another drive of the run (the same answer
    // sent twice, a retried request), it answers one of those only, never a question the run asked meanwhile.
    const sentFor = options.callId === undefined ? this.pendingQuestions(runId) : undefined;
    sentFor?.catch(() => undefined);
    const child = await this.waitingChild(runId, "waiting_input", options);
    if (child) {
      await this.answer(child, answer, options);
      return this.getRun(runId);
    }
    // Its subagent took an answer and ended, and the parent has not taken that end yet (a process died
    // in between, or the wake is under way): wake it, and refuse this answer, which nothing would read.
    const resting = await this.state.runs.getRun(runId);
    const ended = resting && (await this.wakeParentOfEndedChild(resting));
    if (ended) throw endedChildRefusal(runId, ended, (await this.requireRun(runId)).status, { kind: "answer", ...(options.callId !== undefined ? { callId: options.callId } : {}) });
    if (options.runId !== undefined) throw await this.notWaitedOn(runId, options.runId, "waiting_input");
    const sent = await sentFor;
    return this.track(async () => {
      const { driver, revision } = await this.revisions.driverFor(await this.requireOwnRun(runId));
      // Recorded under the run's lease, so an answer can never interleave with the turn that asked.
      return driver.drive(runId, {
        revision,
        beforeDriving: async (run) => {
          // An engine that makes tool calls in parallel can leave more than one question pending, as decide() finds approvals.
          const asking = (await this.state.runs.listToolCalls(runId)).filter((call) => call.status === "waiting_input");
          if (run.status !== "waiting_input" || asking.length === 0) {
            throw new AssemblyLineError("AL_ERR_RUN_NOT_RESUMABLE", `run ${runId} is ${run.status}, not waiting for an answer`, {
              fix: "Answer only runs in waiting_input (see `assembly-line runs show <id>`).",
            });
          }
          // With several questions pending, an answer that names none would be a guess at which it answers.
          const question = options.callId !== undefined ? asking.find((call) => call.callId === options.callId) : asking.length === 1 ? asking[0] : undefined;
          if (!question) {
            const pending = asking.map((call) => call.callId).join(", ");
            throw new AssemblyLineError(
              "AL_ERR_APPROVAL_NOT_FOUND",
              options.callId !== undefined
                ? `run ${runId} has no pending question ${printedCallId(options.callId)}; it waits on ${pending}`
                : `run ${runId} asks ${asking.length} questions (${pending}); an answer must name the one it answers`,
              {
                fix: `Read the questions the run asks now (\`assembly-line runs show ${runId}\`) and answer ${asking.length === 1 ? "it" : "each"} with its callId: ${pending}.`,
              },
            );
          }
          if (sent && !sent.has(question.callId)) {
            throw new AssemblyLineError(
              "AL_ERR_APPROVAL_NOT_FOUND",
              `run ${runId}: the question this answer was sent for is already answered; the run now asks ${printedCallId(question.callId)}`,
              { fix: `Read the question the run asks now (\`assembly-line runs show ${runId}\`) and answer it if you mean to: ${question.callId}.` },
            );
          }
          const output = { answer } as JsonValue;
          const last = asking.length === 1;
          await driver.journal.record(
            runId,
            "input.received",
            { callId: question.callId, answer, actor: options.actor ?? null },
            {
              toolCall: { ...question, status: "completed", output, modelOutput: output, updatedAt: isoTimestamp() },
              ...(last ? { run: { status: "running" as const } } : {}),
            },
            { expectedLastSeq: run.lastSeq },
          );
          options.onRecorded?.();
          // With other questions still pending, the run stays paused until each is answered.
          return last;
        },
      });
    });
  }

  /**
   * Continue a run that is running without an owner (e.g. after a crash).
   * `recovered: true` marks a resume by a recovery sweep (recorded on `run.resumed`).
   */
  async resume(runId: string, options: { recovered?: boolean } = {}): Promise<RunResult> {
    const run = await this.requireOwnRun(runId);
    if (await this.wakeParentOfEndedChild(run)) return this.getRun(runId);
    return this.track(async () => {
      if (run.status !== "running" && run.status !== "queued") return describeRun(this.state.runs, run);
      const { driver, revision } = await this.revisions.driverFor(run);
      return driver.drive(runId, { revision, resumedBy: { recovered: options.recovered ?? false } });
    });
  }

  /**
   * Deliver to observers (hooks, telemetry) the events of this agent's resting runs and its
   * subagents' (finished, or paused for a decision) that a crash kept from them: nothing drives such a run again until a
   * decision, and a hook that pages the approver must not wait for the approval. A run is left to its
   * holder while its lease is live (the release writes where observers got to).
   *
   * By default only the newest `limit` resting runs (200) of the agent and of each subagent are looked at, which is cheap enough for
   * every recovery sweep and finds what a replica that died lately left. With `everyRun`, every run
   * whose observers are behind is found (`listRuns({ observersBehind: true })`, which may read every
   * run of the store): what a host does once when it starts.
   */
  async catchUpObservers(options: { limit?: number; everyRun?: boolean } = {}): Promise<number> {
    let caughtUp = 0;
    // Its subagents' runs carry their own agent ids (`<agent id>/<path>`), each listed on its own.
    for (const agentId of [this.manifest.agent.id, ...subagentIdsOf(this.profiles)]) caughtUp += await this.catchUpObserversOf(agentId, options);
    return caughtUp;
  }

  private async catchUpObserversOf(agentId: string, options: { limit?: number; everyRun?: boolean }): Promise<number> {
    const limit = options.everyRun ? Number.POSITIVE_INFINITY : (options.limit ?? 200);
    const now = new Date();
    let listed = 0;
    let caughtUp = 0;
    let cursor: string | undefined;
    do {
      const page = await this.state.runs.listRuns({
        status: ["completed", "failed", "waiting_approval", "waiting_input"],
        agentId,
        ...(options.everyRun ? { observersBehind: true } : {}),
        limit: Math.min(limit - listed, 50),
        ...(cursor ? { cursor } : {}),
      });
      listed += page.runs.length;
      const behind = page.runs.filter((run) => run.observedSeq < run.lastSeq && isLeaseFree(run.lease, now));
      for (const run of behind) await this.observeOnItsBuild(run);
      caughtUp += behind.length;
      cursor = page.nextCursor ?? undefined;
    } while (cursor && listed < limit);
    return caughtUp;
  }

  /**
   * Deliver a resting run's missed events through the journal of the build it runs on: its events go
   * to that build's hooks/ with that build's revision, as they do when it is decided, and the
   * delivery queues behind a decision being recorded there. When this host has no copy of that build
   * (pruned once no unfinished run needed it, or a fresh image holding only the served build), the
   * served build's journal delivers them: observers get them late rather than never, and the run
   * stops being found behind on every sweep.
   */
  private async observeOnItsBuild(run: RunRecord): Promise<void> {
    let journal = this.journal;
    try {
      // A finished run never goes on: reading it must not hold its build from a prune.
      const finished = run.status === "completed" || run.status === "failed";
      journal = (await this.revisions.driverFor(run, { hold: !finished })).driver.journal;
    } catch (error) {
      if (!isAssemblyLineError(error, "AL_ERR_CONTINUATION_VERSION")) throw error;
      this.logger.info({ runId: run.id, err: error.message }, "observer catch-up delivers a run's events on the served build: its own build is not on this host");
    }
    await journal.observe(run.id);
  }

  /**
   * Release the sandboxes of this agent's finished runs that no process
   * released: a run's sandbox is released after its end is recorded, so a
   * process that stops in between (or whose release fails) leaves it, running,
   * for good. Needs the adapter's `listKeys`; a run whose lease is still live
   * is left to its holder, which may be releasing it now. Hosts call it in their
   * recovery sweep. Returns the keys released.
   */
  async releaseFinishedSandboxes(): Promise<string[]> {
    const adapter = this.options.sandbox;
    if (!adapter?.listKeys) return [];
    const agentId = this.manifest.agent.id;
    const released: string[] = [];
    for (const key of await adapter.listKeys()) {
      const run = await this.state.runs.getRun(key);
      if (!run || !isRunOfAgent(run, agentId) || (run.status !== "completed" && run.status !== "failed")) continue;
      if (!isLeaseFree(run.lease)) continue;
      try {
        await adapter.release(key);
        released.push(key);
      } catch (error) {
        this.logger.warn({ runId: run.id, err: String(error) }, "releasing a finished run's sandbox failed; the next sweep tries again");
      }
    }
    return released;
  }

  /**
   * Take over this agent's runs (its own and its subagents') whose owner's lease expired, and drive
   * each. Another agent's runs in a shared store are never claimed: this build cannot drive them.
   */
  async recoverRuns(options: { limit?: number } = {}): Promise<RunResult[]> {
    await this.catchUpObservers().catch((error) => this.logger.warn({ err: String(error) }, "observer catch-up failed"));
    await this.wakeParentsOfEndedChildren().catch((error) => this.logger.warn({ err: String(error) }, "waking parents of ended subagent runs failed"));
    const agentId = this.manifest.agent.id;
    const claimed = await this.state.runs.claimRecoverableRuns({ owner: this.ownerId, ttlMs: this.options.leaseTtlMs ?? 30_000, limit: options.limit ?? 10, agentId });
    // A store built before claimRecoverableRuns' agentId hands over every agent's runs: another agent's is let go at once, for its own runtime.
    const foreign = claimed.filter((run) => !isRunOfAgent(run, agentId));
    if (foreign.length > 0) {
      this.logger.warn(
        { event: "state.claim_filter_ignored", runIds: foreign.map((run) => run.id) },
        "the state store handed over other agents' runs: it ignores claimRecoverableRuns' agentId; they were released undriven; upgrade the state adapter",
      );
      await Promise.all(foreign.map((run) => this.state.runs.releaseRunLease(run.id, this.ownerId, run.lease?.token)));
    }
    return Promise.all(
      claimed.filter((run) => isRunOfAgent(run, agentId)).map((run) =>
        this.track(async () => {
          // A subagent run left part-way under a parent, or a run above it, that ended since (its budget pause denied, a
          // crash between that end and its children's) has no one to take its output: failed, not driven.
          const endedAncestor = await endedAncestorOf(this.state.runs, run, this.subagentLimits.maxDepth);
          if (endedAncestor) return (await failLeftUnder(this.leftRunParts(), run, endedAncestor)).result;
          // The claim leased the run to us; drive renews that lease.
          const { driver, revision } = await this.revisions.driverFor(run);
          return driver.drive(run.id, { revision, resumedBy: { recovered: true, replacedLease: run.replacedLease ?? null } });
        }),
      ),
    );
  }

  /**
   * The subagent recovery a host that resumes its own runs itself (the Node host) needs besides, and recoverRuns
   * does for the runs it claims: parents a crash left paused on a subagent run that has ended since are woken, and
   * subagent runs left unfinished with no live lease under a run above them that has ended (a crash between that
   * end and theirs) are failed with `AL_ERR_SUBAGENT_PARENT_ENDED`, their sandboxes released, instead of resting
   * `running` for good. A run whose record changed within `settledForMs` (default 0) is left: a drive may be about
   * to take it. Hosts call it in their recovery sweep. Returns the ids of the runs failed.
   */
  async recoverSubagentRuns(options: { settledForMs?: number } = {}): Promise<string[]> {
    await this.wakeParentsOfEndedChildren();
    return this.track(() =>
      failRunsUnderEndedAncestors(this.leftRunParts(), subagentIdsOf(this.profiles), { maxDepth: this.subagentLimits.maxDepth, settledForMs: options.settledForMs ?? 0 }),
    );
  }

  /**
   * After a denied budget pause failed `runId`: fail the subagent runs its pause left part-way, each level down.
   * A failure here is only logged: the recovery sweep fails such a run instead of driving it (recoverRuns).
   */
  private async failRunsLeftByDenial(runId: string): Promise<void> {
    await failLeftDescendants(this.leftRunParts(), runId, (run) => pauseDeniedError(run, runId)).catch((error: unknown) =>
      this.logger.warn({ runId, err: String(error) }, "failing the subagent runs a denied budget pause left part-way failed; the recovery sweep fails them instead of driving them"),
    );
  }

  /** What failing a subagent run left part-way takes (left-children.ts): its build's driver, and its sandbox released as a failed run's is. */
  private leftRunParts(): LeftRunParts {
    return {
      runs: this.state.runs,
      logger: this.logger,
      driverFor: (run) => this.revisions.driverFor(run),
      releaseHeld: async (run) => {
        const adapter = this.options.sandbox;
        // A "shared" workspace belongs to the run it names, and a run that never started acquired none.
        if (!adapter || (run.input.parent?.sandboxRunId ?? run.id) !== run.id || run.status === "queued") return;
        await adapter.release(run.id).catch((error) => this.logger.warn({ runId: run.id, err: String(error) }, "sandbox release failed"));
      },
    };
  }

  /**
   * Move a paused run from the build it paused under to this runtime's build
   * (`assembly-line runs migrate <runId> --to current`).
   */
  async migrateRun(runId: string, options: { actor?: string } = {}): Promise<RunResult> {
    await this.requireOwnRun(runId);
    return this.track(() => this.revisions.migrate(runId, options));
  }

  /** Delete the kept builds of earlier revisions that no unfinished run needs; hosts call it at boot. */
  async pruneRevisions(): Promise<string[]> {
    return this.revisions.prune();
  }

  /** The revision a run continues on: its own, or the one it was migrated to. */
  async revisionOf(runId: string): Promise<string> {
    return this.revisions.revisionOf(await this.requireRun(runId));
  }

  async getRun(runId: string): Promise<RunResult> {
    return describeRun(this.state.runs, await this.requireRun(runId));
  }

  async listEvents(runId: string): Promise<RunEvent[]> {
    await this.requireRun(runId);
    return this.state.runs.listEvents(runId);
  }

  /** true when a brand-new run would start now without waiting. */
  hasRunCapacity(): boolean {
    return this.admission.hasCapacity();
  }

  /** Brand-new runs executing in this process now, and waiting for a slot: what maxConcurrentRuns and maxQueuedRuns bound. */
  runLoad(): { executing: number; waiting: number } {
    const { active, queued } = this.admission.load;
    return { executing: active, waiting: queued };
  }

  /** Resolves once no run is executing or waiting for a slot. */
  async onIdle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  async close(): Promise<void> {
    this.revisions.close();
    await this.onIdle();
    await this.options.connections?.close?.().catch((error) => this.logger.warn({ err: String(error) }, "closing connections failed"));
    await this.flushTelemetry();
    await this.state.close?.();
  }

  /** The call ids of the questions run `runId` asks now. */
  private async pendingQuestions(runId: string): Promise<Set<string>> {
    return new Set((await this.state.runs.listToolCalls(runId)).filter((call) => call.status === "waiting_input").map((call) => call.callId));
  }

  /** The pending approvals (by approvalId, else callId) and the budget pause (its event's seq) run `runId` rests on now. */
  private async restingOn(runId: string, options: { budgetPause: boolean }): Promise<{ calls: Set<string>; budgetPauseSeq: number | undefined }> {
    // The events only for the budget pause, which only a decision without a call id may decide.
    const [calls, events] = await Promise.all([this.state.runs.listToolCalls(runId), options.budgetPause ? this.state.runs.listEvents(runId) : []]);
    return { calls: new Set(calls.filter((call) => call.status === "waiting_approval").map((call) => call.approvalId || call.callId)), budgetPauseSeq: budgetPauseEventOf(events)?.seq };
  }

  private async decide(runId: string, decision: "approved" | "denied", options: { callId?: string; runId?: string; actor?: string; reason?: string; onRecorded?: () => void }): Promise<RunResult> {
    options = withoutOwnRunId(runId, options);
    // What the run rests on as a decision arrives, read before anything else is awaited. Queued behind another
    // drive of the run (the same approval sent twice, a retried request), it decides that pause only, never the
    // next one the run reached meanwhile, which its sender never saw: with a call id too, as one call may pause
    // at more than one gate (its own, then the change it makes), each with its own approval id.
    const sentFor = this.restingOn(runId, { budgetPause: options.callId === undefined });
    // Read whatever becomes of it: a refusal below may come first.
    sentFor.catch(() => undefined);
    const child = await this.waitingChild(runId, "waiting_approval", options);
    if (child) {
      // The parent waits on its subagent's decision: decide it there; the child's end resumes the parent.
      await this.decide(child, decision, options);
      return this.getRun(runId);
    }
    // As for answer: a subagent whose call was decided ended before its parent woke; wake it and refuse this decision.
    const resting = await this.state.runs.getRun(runId);
    const ended = resting && (await this.wakeParentOfEndedChild(resting));
    if (ended) throw endedChildRefusal(runId, ended, (await this.requireRun(runId)).status, { kind: "decision", ...(options.callId !== undefined ? { callId: options.callId } : {}) });
    if (options.runId !== undefined) throw await this.notWaitedOn(runId, options.runId, "waiting_approval");
    const sent = await sentFor;
    return this.track(async () => {
      const { driver, revision } = await this.revisions.driverFor(await this.requireOwnRun(runId));
      let pauseDenied = false;
      // Recorded under the run's lease: a decision can never interleave with the turn that paused,
      // nor with another replica acting on the same run.
      const decided = await driver.drive(runId, {
        revision,
        beforeDriving: async (run) => {
          const pending = (await this.state.runs.listToolCalls(runId)).filter((call) => call.status === "waiting_approval");
          const events = run.status === "waiting_approval" && pending.length === 0 ? await this.state.runs.listEvents(runId) : [];
          const budgetPause = budgetPauseOf(events);
          if (budgetPause) {
            if (options.callId !== undefined) {
              throw new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", `run ${runId} waits on its ${budgetPause.budget} budget, not on tool call ${options.callId}`, {
                fix: "Decide the budget pause without a call id (`assembly-line approve <runId>` grows the budget, deny stops the run).",
              });
            }
            if (sent && budgetPauseEventOf(events)?.seq !== sent.budgetPauseSeq) {
              throw new AssemblyLineError(
                "AL_ERR_APPROVAL_NOT_FOUND",
                `run ${runId}: the pause this decision was sent for is already decided; the run now rests on another pause, its ${budgetPause.budget} budget (${budgetPause.used} used of ${budgetPause.limit})`,
                { fix: `Check \`assembly-line runs show ${runId}\`, then approve or deny this new pause if it should be decided too.` },
              );
            }
            await decideBudgetPause(driver.journal, run, budgetPause, driver.budgetsOf(run), decision, options.actor ?? null, (code) => driver.failureDeliveryOf(run, code), options.reason);
            pauseDenied = decision === "denied";
            options.onRecorded?.();
            return decision === "approved";
          }
          if (run.status !== "waiting_approval" || pending.length === 0) {
            throw new AssemblyLineError("AL_ERR_RUN_NOT_RESUMABLE", `run ${runId} is ${run.status}, with no tool call waiting for approval`, {
              fix: "Approvals are single-use; check `assembly-line runs show <id>` for what the run waits on.",
            });
          }
          // A given call id, even "" (an empty form field), names a call: only an omitted one means "the only pending call".
          const call =
            options.callId !== undefined
              ? pending.find((candidate) => candidate.callId === options.callId || candidate.approvalId === options.callId)
              : pending.length === 1
                ? pending[0]
                : undefined;
          if (!call) {
            const named = options.callId !== undefined ? `run ${runId} has no pending approval ${printedCallId(options.callId)}` : `run ${runId} has ${pending.length} pending approvals; name one`;
            throw new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", named, {
              fix: `Pass one of: ${pending.map((candidate) => candidate.callId).join(", ")}.`,
            });
          }
          if (sent && !sent.calls.has(call.approvalId || call.callId)) {
            throw new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", `run ${runId}: the approval this decision was sent for is already decided; the run now waits on another ${call.toolName} call, ${call.callId}`, {
              fix: `Check \`assembly-line runs show ${runId}\`, then decide call ${call.callId} by its call id if it should be decided too.`,
            });
          }
          const time = isoTimestamp();
          const denial = { error: `The user denied this ${call.toolName} call.`, denied: true, ...(options.reason ? { reason: options.reason } : {}) } as JsonValue;
          const last = pending.length === 1;
          await driver.journal.record(
            runId,
            decision === "approved" ? "approval.granted" : "approval.denied",
            { approvalId: call.approvalId, callId: call.callId, toolName: call.toolName, actor: options.actor ?? null, reason: options.reason ?? null },
            {
              toolCall: decision === "approved" ? { ...call, status: "approved", updatedAt: time } : { ...call, status: "denied", output: denial, modelOutput: denial, updatedAt: time },
              ...(last ? { run: { status: "running" as const } } : {}),
            },
            { expectedLastSeq: run.lastSeq },
          );
          options.onRecorded?.();
          // With other calls still waiting, the run stays paused until each is decided.
          return last;
        },
      });
      // Once the parent's failure is recorded: what its pause left part-way (its subagents, stopped with it) is failed too.
      if (pauseDenied) await this.failRunsLeftByDenial(runId);
      return decided;
    });
  }

  /**
   * Wake `run` when it rests on a subagent run that has ended but whose end it never took (a
   * process died between the child's end and the parent's wake: nothing else would wake it). The
   * ended child when there was one (woken here, or by a caller that got there first), else undefined.
   */
  private async wakeParentOfEndedChild(run: RunRecord): Promise<RunRecord | undefined> {
    if ((run.status !== "waiting_approval" && run.status !== "waiting_input") || !isRunOfAgent(run, this.manifest.agent.id)) return undefined;
    if ((await this.state.runs.listToolCalls(run.id)).some((call) => call.status === "waiting_approval" || call.status === "waiting_input")) return undefined;
    const events = await this.state.runs.listEvents(run.id);
    const taken = new Set(events.filter((event) => event.type === "subagent.completed").map((event) => String(event.data.childRunId)));
    const waitedOn = new Set(events.filter((event) => event.type === "subagent.waiting").map((event) => String(event.data.childRunId)));
    for (const childRunId of waitedOn) {
      if (taken.has(childRunId)) continue;
      const child = await this.state.runs.getRun(childRunId);
      if (child?.status !== "completed" && child?.status !== "failed") continue;
      const { driver } = await this.revisions.driverFor(child);
      // Left paused (another child still waits, or its own budget does): no end to report, the caller's own refusal stands.
      return (await this.track(() => driver.wakeParent(childRunId))) ? child : undefined;
    }
    return undefined;
  }

  /** Where the recovery sweep's search for parents a crash left waiting goes on (see StrandedParentSweep). */
  private strandedParents?: StrandedParentSweep;

  /**
   * Parents this agent's subagent runs ended under while they waited, but never woke (see
   * wakeParentOfEndedChild): a bounded share of them every sweep, each reached in time (StrandedParentSweep).
   */
  private async wakeParentsOfEndedChildren(): Promise<void> {
    this.strandedParents ??= new StrandedParentSweep(this.state.runs, this.profiles);
    await this.strandedParents.sweep(async (run) => {
      // One parent that cannot be woken now (its build gone, the store failing) keeps no other waiting.
      await this.wakeParentOfEndedChild(run).catch((error: unknown) => this.logger.warn({ runId: run.id, err: String(error) }, "waking a parent of an ended subagent run failed; a later sweep tries again"));
    });
  }

  /**
   * The subagent run a decision (`waiting_approval`) or an answer (`waiting_input`) given to paused `runId` goes to,
   * when the run itself has no call waiting for it (its pause came from its subagents): of the children that wait for
   * one (describeRun shows their calls as the run's), the one with `options.runId` below it, else the one with the call
   * `options.callId` names, else the first. Several spawned together can wait at once, and their call ids can be the same.
   */
  private async waitingChild(runId: string, status: "waiting_approval" | "waiting_input", options: { callId?: string; runId?: string }): Promise<string | undefined> {
    const run = await this.requireRun(runId);
    if (run.status !== "waiting_approval" && run.status !== "waiting_input") return undefined;
    // Its own pending calls hide its children's (describeRun), so none of theirs is decided through it then.
    const own = (await this.state.runs.listToolCalls(runId)).some((call) => call.status === "waiting_approval" || call.status === "waiting_input");
    if (own) return undefined;
    const children = (await pausedChildren(this.state.runs, run)).filter((child) => pendingIn(child, status).length > 0 || (status === "waiting_approval" && waitingRunsOf(child).some((waiting) => waiting.pendingBudget)));
    if (options.runId !== undefined) {
      const named = options.runId;
      return children.find((child) => child.run.id === named || waitingRunsOf(child).some((waiting) => waiting.runId === named))?.run.id;
    }
    const callId = options.callId;
    const pending = children.flatMap((child) => pendingIn(child, status).map((call) => ({ child, call })));
    // No call to find (only budgets wait): the first child refuses a call id itself, naming its budget.
    if (callId === undefined || pending.length === 0) return children[0]?.run.id;
    const holders = [...new Set(pending.filter(({ call }) => call.callId === callId || ("approvalId" in call && call.approvalId === callId)).map(({ child }) => child))];
    if (holders.length === 1) return holders[0]!.run.id;
    const what = status === "waiting_approval" ? "approval" : "question";
    const listed = (calls: typeof pending) => calls.map(({ child, call }) => `${call.callId} (subagent ${call.subagent ?? child.run.input.parent?.subagent ?? ""}, run ${call.runId ?? child.run.id})`).join(", ");
    if (holders.length === 0) {
      throw new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", `run ${runId} has no pending ${what} ${printedCallId(callId)}; its subagents wait on ${listed(pending)}`, {
        fix: `Read what the run waits on now (\`assembly-line runs show ${runId}\`) and name one of those calls.`,
      });
    }
    const same = pending.filter(({ call }) => call.callId === callId);
    throw new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", `run ${runId} waits on ${holders.length} subagent runs with a pending ${what} ${printedCallId(callId)}: ${listed(same)}`, {
      fix:
        status === "waiting_approval"
          ? "Name the run too (`runId`: the one its pendingApprovals entry shows), or pass the call's approvalId instead of its callId."
          : `Name the run too (\`runId\`: the one its questions entry shows), or answer that run itself (\`assembly-line answer <its runId> "..." --call ${callId}\`).`,
      details: { runId, callId, runIds: same.map(({ child, call }) => call.runId ?? child.run.id) },
    });
  }

  /** The refusal of a decision or answer whose `runId` names neither the run nor a subagent run it waits on for one. */
  private async notWaitedOn(runId: string, named: string, status: "waiting_approval" | "waiting_input"): Promise<AssemblyLineError> {
    const run = await this.requireRun(runId);
    const waiting = run.status === "waiting_approval" || run.status === "waiting_input" ? (await pausedChildren(this.state.runs, run)).filter((child) => pendingIn(child, status).length > 0) : [];
    const runIds = [...new Set(waiting.flatMap((child) => pendingIn(child, status).map((call) => call.runId ?? child.run.id)))];
    const what = status === "waiting_approval" ? "approval" : "question";
    return new AssemblyLineError("AL_ERR_APPROVAL_NOT_FOUND", `run ${runId} waits on no subagent run ${named} with a pending ${what}`, {
      fix: runIds.length > 0 ? `Name one of the runs it waits on: ${runIds.join(", ")}.` : `Leave the runId out: see what run ${runId} waits on (\`assembly-line runs show ${runId}\`).`,
      details: { runId, subagentRunId: named },
    });
  }

  /**
   * A conversation's turns run one at a time, in the order they were stored, on every replica of a
   * shared store: a queued run is not driven while an older run of its agent and conversation is queued or
   * running (a paused one lets it go, as a host's mailbox does). Asked of the store, since no replica's
   * mailbox sees another's runs; one read of the conversation's unfinished runs, for runs of a conversation only.
   */
  private async refuseWhileConversationBusy(run: RunRecord): Promise<void> {
    if (run.conversationId === null) return;
    const filter: RunListFilter = { agentId: run.agentId, conversationId: run.conversationId, status: ["queued", "running"], limit: 20 };
    let older: RunRecord[] | undefined;
    for (let cursor: string | undefined; ; ) {
      const page = await this.state.runs.listRuns({ ...filter, ...(cursor !== undefined ? { cursor } : {}) });
      if (older === undefined) {
        const at = page.runs.findIndex((listed) => listed.id === run.id);
        // Newest first: what follows the run, on this page or the next, was accepted before it.
        if (at !== -1) older = page.runs.slice(at + 1);
      } else older = page.runs;
      // Found with older ones beside it, or at the end of the list; not listed at all: it left `queued` meanwhile, and the drive sees that.
      if ((older !== undefined && older.length > 0) || page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    if (older === undefined || older.length === 0) return;
    const [next] = older;
    throw new AssemblyLineError("AL_ERR_CONVERSATION_BUSY", `run ${run.id} waits: run ${next!.id} of conversation ${run.conversationId} is ${next!.status}`, {
      fix: "Start it again once the conversation's earlier run has ended or paused; a host's mailbox does so by itself.",
      // Every earlier unfinished run listed with it, so a mailbox holding one of them lets that one go first.
      details: { runId: run.id, conversationId: run.conversationId, olderRunIds: older.map((listed) => listed.id) },
    });
  }

  /**
   * A run this runtime may act on: its agent's, or one of its subagents' (`<agent id>/<path>`). A store
   * shared with another agent holds runs this build would otherwise continue, decide or migrate.
   */
  private async requireOwnRun(runId: string): Promise<RunRecord> {
    const run = await this.requireRun(runId);
    const agentId = this.manifest.agent.id;
    if (!isRunOfAgent(run, agentId)) {
      throw new AssemblyLineError("AL_ERR_RUN_NOT_FOUND", `run ${runId} belongs to agent "${run.agentId}", not to "${agentId}", which this runtime serves`, {
        fix: `Act on it through a runtime (or host) of agent "${run.agentId}".`,
        details: { runId, agentId: run.agentId },
      });
    }
    return run;
  }

  private async requireRun(runId: string): Promise<RunRecord> {
    const run = await this.state.runs.getRun(runId);
    if (!run) {
      throw new AssemblyLineError("AL_ERR_RUN_NOT_FOUND", `no run ${runId} in this state store`, { fix: "List runs with `assembly-line runs list`." });
    }
    return run;
  }

  private track<T>(work: () => Promise<T>): Promise<T> {
    const promise = work();
    this.inFlight.add(promise);
    promise.then(
      () => this.inFlight.delete(promise),
      () => this.inFlight.delete(promise),
    );
    return promise;
  }

  private async selectHarness(modelSpec: string, runId: string): Promise<AgentHarness> {
    if (this.options.agentHarness) return this.options.agentHarness;
    const harness = await this.hooks.harness.promise({ runId, modelSpec });
    if (harness) return harness;
    throw new AssemblyLineError("AL_ERR_HARNESS", `no engine serves model "${modelSpec}"`, {
      fix: "Run through a host that installs @assemblyline-agents/pi (e.g. `assembly-line run`), pass defaultHarness/agentHarness, or use --model scripted:<file.json>.",
    });
  }

  private tapRoutes(): void {
    const scripts = new Map<string, AgentHarness>();
    this.hooks.harness.tapPromise({ name: "scripted-route", stage: STAGE.ROUTE }, async ({ modelSpec }) => {
      if (!modelSpec.startsWith(SCRIPTED_PREFIX)) return undefined;
      const file = modelSpec.slice(SCRIPTED_PREFIX.length);
      let harness = scripts.get(file);
      if (!harness) scripts.set(file, (harness = scriptedHarness(loadModelScript(file))));
      return harness;
    });
    for (const [prefix, harness] of Object.entries(this.options.modelHarnesses ?? {})) {
      this.hooks.harness.tapPromise({ name: `model-route:${prefix}`, stage: STAGE.ROUTE }, async ({ modelSpec }) =>
        providerOf(modelSpec) === prefix ? harness : undefined,
      );
    }
    // Without a host-given engine, Pi serves the rest (with RuntimeOptions.models), loaded on first use.
    let fallback: Promise<AgentHarness> | undefined = this.options.defaultHarness ? Promise.resolve(this.options.defaultHarness) : undefined;
    this.hooks.harness.tapPromise({ name: "default-engine", stage: STAGE.FALLBACK }, async () => {
      fallback ??= loadDefaultEngine(this.options.models).catch((error) => {
        fallback = undefined;
        throw error;
      });
      return fallback;
    });
  }

  /**
   * Each build's `hooks/` files, by revision: a run that goes on under an earlier
   * build (a paused run after a rebuild) has its events handled by that build's
   * hooks, as its tools are that build's. One tap serves every build, made when
   * the first build with hooks is loaded: without hooks the event hook stays
   * free of taps, and events reach the other observers without waiting.
   */
  private tapUserHooks(revision: string, files: SourceBundle["hooks"]): void {
    this.hookFiles.set(revision, files);
    if (files.length === 0 || this.userHooksTapped) return;
    this.userHooksTapped = true;
    this.hooks.event.tapPromise({ name: "hooks/", stage: STAGE.DEFAULT }, async (event, context) => {
      const own = this.hookFiles.get(context.agentRevision) ?? [];
      await Promise.all(own.map(({ file, hook }) => this.deliverToHookFile(file, hook, event, context)));
    });
  }

  private async deliverToHookFile(file: string, hook: SourceBundle["hooks"][number]["hook"], event: RunEvent, context: EventContext): Promise<void> {
    // Own keys only: an event named like an Object.prototype member ("hasOwnProperty", "toString") is no handler of the file's.
    const handlers = [event.type, "*"].filter((key) => Object.hasOwn(hook.events, key)).map((key) => hook.events[key]).filter((handler) => typeof handler === "function");
    if (handlers.length === 0) return;
    // The event object is the one every other observer (telemetry, the host's watcher and outbox) gets: a hook changing it would change what they see.
    const copy = structuredClone(event);
    for (const handler of handlers) {
      try {
        const handled = handler!(copy, { runId: event.runId, agentRevision: context.agentRevision, agent: { id: context.agentId, name: context.agentName } });
        await finishedWithin(handled, this.hookTimeoutMs);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.logger.warn({ event: "hook.failed", hook: file, eventType: event.type, runId: event.runId, err: message }, "hook handler threw");
        // A failing handler of hook.failed itself is only logged, so a broken hook cannot loop.
        if (event.type !== "hook.failed") {
          await (this.journals.get(context.agentRevision) ?? this.journal).appendUnobserved(event.runId, [{ type: "hook.failed", data: { hook: file, eventType: event.type, eventSeq: event.seq, error: message } }]);
        }
      }
    }
  }

  /** A run's services under the build it runs on (`build`: the served one, or an earlier one its paused runs are pinned to). */
  private servicesFor(
    run: RunRecord,
    resumed: boolean,
    build: { manifest: AgentManifest; profiles: AgentProfile; journal: RunJournal; drive: SpawnerParts["drive"] },
  ): RunServices {
    const sandboxAdapter = this.options.sandbox;
    // A subagent with workspace "shared" works in the sandbox of the run it names; it never releases it.
    const sandboxKey = run.input.parent?.sandboxRunId ?? run.id;
    const ownsSandbox = sandboxKey === run.id;
    let sandbox: Promise<Sandbox> | undefined;
    // Acquired on first use: a run that never touches /workspace or bash creates no sandbox.
    const getSandbox = () => {
      if (!sandboxAdapter) {
        return Promise.reject(
          new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", "this runtime has no sandbox adapter", {
            fix: "Configure a sandbox (the local plugin, or dockerSandbox() in gateway.ts).",
          }),
        );
      }
      sandbox ??= sandboxAdapter.acquire(sandboxKey).catch((error) => {
        sandbox = undefined;
        throw error;
      });
      return sandbox;
    };
    const profile = profileOfRun(build.profiles, run);
    const skills = this.skillLibrary(profile, build.manifest.agentRevision);
    const onSkillChange = async (change: SkillWriteResult) => {
      const data = { agentId: profile.agentId, name: change.name, path: change.path, before: change.before, after: change.after, changedBy: "agent" };
      // Inside a tool call's skill-change step: committed with the step's completion (durable-skill-change.ts).
      if (holdForStep({ type: "skill.changed", data })) return;
      await build.journal.record(run.id, "skill.changed", data);
    };
    const filesystemWith = (skillGate: SkillWriteGate | undefined, skillJournal?: SkillChangeSteps) =>
      createRuntimeFilesystem({
        memory: this.state.memory,
        // /history shows the run's agent's messages only, as its context does.
        conversations: agentConversations(this.state.conversations, run.agentId, this.state.runs, this.logger),
        conversationId: run.conversationId,
        files: this.state.files,
        blob: this.options.blob,
        getSandbox,
        skills,
        onSkillChange,
        ...(skillGate ? { skillGate } : {}),
        ...(skillJournal ? { skillJournal } : {}),
      });
    // Made with `new`, not as an object literal: see RunServicesRecord.
    const services = new RunServicesRecord(
      getSandbox,
      (request, callId, spawnIndex, signal) =>
        spawnSubagent(
          { runs: this.state.runs, journal: build.journal, limits: this.subagentLimits, spawning: this.spawning, drive: build.drive, usage: this.state.usage, budgets: profile.budgets, agentRevision: build.manifest.agentRevision },
          run,
          profile,
          { callId, spawnIndex, ...(signal ? { turn: signal } : {}) },
          request,
        ),
      filesystemWith(undefined),
      async () => {
        // A run that starts and ends in one drive without acquiring its sandbox has none to release.
        if (!sandboxAdapter || !ownsSandbox || (!sandbox && !resumed)) return;
        sandbox = undefined;
        await sandboxAdapter.release(run.id).catch((error) => this.logger.warn({ runId: run.id, err: String(error) }, "sandbox release failed"));
      },
    );
    if (skills.writable) services.selfImprovement = createSelfImprovementApi(skills, onSkillChange);
    services.memory = createMemoryApi(this.state.memory);
    const automations = build.manifest.agent.dynamicAutomations;
    if (automations?.dynamic) services.automationManager = (gate, journal) => createAutomationManager(this.automations, gate(automations.approval), journal);
    services.connections = connectionsOf(profile, this.connections.connections());
    // Adding and removing connections is the root agent's: a subagent sees only what it names.
    if (this.dynamicConnections.dynamic && profile.path === "") services.connectionManager = (gate, journal) => this.connections.manager(gate(this.dynamicConnections.approval), run.id, journal);
    if (this.options.blob) services.blob = this.options.blob;
    if (this.options.resources) services.resources = this.options.resources;
    if (skills.writable || profile.selfImprovement.writeApproval) {
      // Each tool call's own: its approval of a skill write, and its steps, which make each skill change and its event durable together.
      services.forCall = (call) => {
        const gate = profile.selfImprovement.writeApproval ? skillWriteGate(this.state.runs, run.id, call) : undefined;
        // One numbering for the call's skill changes, made by either.
        const journal = skillChangeSteps({ step: call.step, prefix: `skill-change:${call.id}` });
        return { filesystem: filesystemWith(gate, journal), ...(skills.writable ? { selfImprovement: createSelfImprovementApi(skills, onSkillChange, gate, journal) } : {}) };
      };
    }
    return services;
  }
}

/**
 * Kernels a runtime has tapped. A runtime adds taps of its own to its kernel's hooks (its hooks/ files,
 * telemetry, its engine routes) that tapable can never remove: a second runtime on the same kernel
 * would run the first's hooks/ files twice per event, answer its runs with the first's engine and send
 * its events to the first's telemetry. So a kernel serves one runtime, for good, even after close().
 */
const claimedKernels = new WeakSet<Kernel>();

function refuseClaimedKernel(kernel: Kernel): void {
  if (claimedKernels.has(kernel)) {
    throw new AssemblyLineError("AL_ERR_KERNEL_IN_USE", "RuntimeOptions.kernel is a kernel another OpenEveRuntime was given: a kernel serves one runtime, for good (its taps stay after close())", {
      fix: "Create one kernel per runtime: call createKernel({ plugins }) (or composeGateway(...)) again for each OpenEveRuntime or listenNodeRuntime.",
    });
  }
}

/** A paused child's calls waiting for `status`'s decision or answer (its subagents' too), as its parent shows them. */
function pendingIn(child: PausedChild, status: "waiting_approval" | "waiting_input"): Array<PendingApproval | PendingQuestion> {
  return (status === "waiting_approval" ? child.described.pendingApprovals : child.described.questions) ?? [];
}

/** A `runId` option naming the run decided itself names no subagent run: left out. */
function withoutOwnRunId<T extends { runId?: string }>(runId: string, options: T): T {
  if (options.runId !== runId) return options;
  const rest = { ...options };
  delete rest.runId;
  return rest;
}

/** A call id as a refusal prints it: an empty one shown as "" rather than as nothing. */
function printedCallId(callId: string): string {
  return callId === "" ? '""' : callId;
}

function providerOf(modelSpec: string): string {
  return modelSpec.split(/[/:]/)[0] ?? modelSpec;
}

/** How long a hooks/ handler may take for one event by default (RuntimeOptions.hookTimeoutMs). */
const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
/** How long a run's resolver may take by default (RuntimeOptions.resolverTimeoutMs). */
const DEFAULT_RESOLVER_TIMEOUT_MS = 30_000;

/**
 * Wait for a hook handler at most `ms`: the run waits for its hooks (they see events in order), and
 * one that never settles must not hold the run, its lease and its slot for good. It runs on unawaited.
 */
async function finishedWithin(handled: unknown, ms: number): Promise<void> {
  if (typeof (handled as PromiseLike<unknown> | undefined)?.then !== "function") return;
  await withinTimeout(handled as PromiseLike<unknown>, ms, "a hook handler", () => new Error(`the handler did not finish within ${ms} ms (RuntimeOptions.hookTimeoutMs); the run went on without it`));
}

/** A whole-number option checked as its env variable is: 0 slots would leave every run waiting for good. */
function wholeNumberOption(value: number | undefined, name: string, least: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < least) {
    throw new TypeError(`${name} is ${String(value)}; give a whole number, ${least} or more (default 16)`);
  }
  return value;
}

function positiveInt(value: string | undefined, name: string, allowZero = false): number | undefined {
  if (value === undefined || value === "") return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < (allowZero ? 0 : 1)) {
    throw new TypeError(`${name}=${value} must be a ${allowZero ? "non-negative" : "positive"} integer`);
  }
  return parsed;
}

