import {
  AssemblyLineError,
  errorSummary,
  fenceHolds,
  isAssemblyLineError,
  withinTimeout,
  MAX_TIMER_MS,
  TERMINAL_RUN_STATUSES,
  type AgentHarness,
  type CaptureContent,
  type HarnessContext,
  type Lease,
  type TakenRunLease,
  type JsonValue,
  type NewDelivery,
  type RunBudgets,
  type RunCapabilityDeclaration,
  type RunResolverContext,
  type NewRunEvent,
  type RunEvent,
  type RunRecord,
  type RunStore,
  type RuntimeLogger,
  isoTimestamp,
  storableText,
} from "@assemblyline-agents/core";
import type { SourceBundle } from "../compiler/bundle.js";
import type { AgentManifest } from "../compiler/manifest.js";
import { reachesAnyone, type KernelHooks } from "../hooks.js";
import { agentConversations } from "../state/agent-conversations.js";
import { isParentPausedStopOf } from "../subagents/parent-paused.js";
import { agentUsage } from "../state/agent-usage.js";
import type { ResolvedState } from "../state/resolve-state.js";
import { declarationProblem } from "./capability-declaration.js";
import { RunBudget, budgetConversationOf, budgetExceededError, budgetPauseOf, type BudgetExceeded } from "./budget.js";
import { buildModelContext } from "./context-policy.js";
import { isInfrastructureFailure, leaseLost } from "./infrastructure-failure.js";
import { dropUndefined, type RunJournal } from "./journal.js";
import { describeRun, type RunResult } from "./run-result.js";
import { DriveScope, type RunScope, type RunServices } from "./run-scope.js";
import { RunSkills } from "./run-skills.js";
import { ENGINE_STEP_PREFIX, holdForStep, runStep } from "./step.js";
import { callTool } from "./tool-pipeline.js";
import { activatedToolNames } from "./tool-activation.js";
import { defaultToolsProblem, toModelToolSpec, visibleTools, type ToolTable, type ToolTableEntry } from "./tool-table.js";
import { profileOfRun, type AgentProfile } from "../agents/agent-profile.js";
import { loggedErrorText } from "../telemetry/logged-error.js";
import type { SkillLibrary } from "../skills/skill-library.js";
import { activeSkillsOf } from "../skills/active-skills.js";

export interface RunDriverParts {
  manifest: AgentManifest;
  sourceBundle: SourceBundle;
  hooks: KernelHooks;
  state: ResolvedState;
  journal: RunJournal;
  /** The root agent's profile; subagent runs use the profile below it their input names. */
  profiles: AgentProfile;
  skillLibrary(profile: AgentProfile): SkillLibrary;
  logger: RuntimeLogger;
  ownerId: string;
  leaseTtlMs: number;
  /** How long resolving a run's capabilities may take (RuntimeOptions.resolverTimeoutMs). */
  resolverTimeoutMs: number;
  selectHarness(modelSpec: string, runId: string): Promise<AgentHarness>;
  /** The services of one drive of `run`; `resumed` when the run was driven before (it may own a sandbox already). */
  services(run: RunRecord, resumed: boolean): RunServices;
  textDelta(runId: string, delta: string): void;
  /** The text streamed for the run's reply under way is void; the reply streams again (HarnessContext.textRestart). */
  textRestart?(runId: string): void;
  /** Whether a run from this channel owes it a delivery row (RuntimeOptions.owesDelivery). */
  owesDelivery(channel: string): boolean;
  /** Whether a failed run from this channel owes it a failure delivery row (RuntimeOptions.owesFailureDelivery). */
  owesFailureDelivery(channel: string): boolean;
  /** Before each turn: add tools that appeared since (connections added on another replica, or at run time). */
  beforeTurn?(): Promise<void>;
  /** Offer tool_search and tool_call even while nothing is deferred yet (dynamic connections on). */
  alwaysOfferDiscovery?: boolean;
  /** Told when this process starts and stops driving a run (telemetry keeps a run's open spans only in between). */
  driveWatch?: DriveWatch;
  /**
   * instrumentation.ts's captureContent as this process loaded it (the tracer's mode), not the
   * manifest's: the module is evaluated again at load, so a mode read from the environment is the one set now.
   */
  captureContent?: CaptureContent;
  /**
   * The driver of the build a run continues on (RevisionDrivers.driverFor). A parent woken by its ended
   * child goes on there: it may have been migrated to another build while it waited. Default: this driver.
   */
  driverFor?(run: RunRecord): Promise<{ driver: RunDriver; revision: string }>;
}

/** Watches which runs this process drives. Neither method may throw. */
export interface DriveWatch {
  driveStarted(runId: string): void;
  /**
   * The drive ended, or its lease was lost (`leaseLost`: another replica owns the run now); called again when a lost drive ends.
   * With the lease lost, `abandoned` holds the model calls whose results this process will never record: those still
   * running, and those done whose results were held for the next append (their events), which another replica makes again.
   */
  driveStopped(runId: string, leaseLost: boolean, abandoned?: AbandonedModelCalls): Promise<void>;
}

/** Model calls a drive that lost its lease leaves unrecorded (see DriveWatch.driveStopped). */
export interface AbandonedModelCalls {
  /** Step key and start (ISO time) of each call still running. */
  running: Array<{ key: string; startedAt: string }>;
  /** The held events of calls that returned: each `model.response` with the `durable_step.completed` that times it. */
  held: NewRunEvent[];
}


/** What `run.started` records: how the run was resolved, so any replica can continue it. */
interface StartedData {
  modelSpec: string;
  instructions: string;
  defaultTools: string[] | null;
}

/**
 * Drives one run from its current durable state to its next resting state
 * (completed, failed, or paused), holding the run's lease throughout.
 */
export interface DriveOptions {
  /** The revision the run continues on (its own, or the one it was migrated to); default: its own. */
  revision?: string;
  forcedModel?: string;
  signal?: AbortSignal;
  /**
   * Set when the drive takes over a run left part-way (a crash, a shutdown). `replacedLease` is the lease the
   * recovery's claim replaced (null: it had none); left out, the drive's own take reports it.
   */
  resumedBy?: { recovered: boolean; replacedLease?: Lease | null };
  /**
   * Runs under the lease before the run moves on (an approval, an answer):
   * decisions and execution can never interleave. Return false to stop there.
   */
  beforeDriving?: (run: RunRecord) => Promise<boolean>;
  /**
   * A wake, not a decision: a run that has finished, or that another process holds,
   * is left to it and described as it stands instead of refused (someone else woke it).
   */
  leaveIfTaken?: boolean;
  /**
   * The run as this process just created it (createRun's answer): leased to this
   * owner in the same write when the store could, with its `run.created` event.
   * The drive then reads back none of it.
   */
  created?: { run: RunRecord; event?: RunEvent };
}

/** Shared between the heartbeat and the run's scope. */
interface LeaseWatch {
  lost: boolean;
  /** Model calls running now, by step key, with their start (ISO time): what a lost lease abandons. */
  readonly modelCalls: Map<string, string>;
  /**
   * Called once when the lease is lost: the turn in progress sets it to abort its signal, so
   * tools and engines stop with the run. A plain callback: an AbortController per drive cost
   * as much as the rest of its bookkeeping, and turns run one at a time.
   */
  onLost?: (reason: Error) => void;
}

export class RunDriver {
  /** Runs this process is driving: one owner id per process, so the lease alone cannot tell two drives apart. */
  private readonly active = new Map<string, Promise<unknown>>();

  /** Runs seen to be subagents' (their input names a parent): only their end can resume another run. */
  private readonly subagentRuns = new Set<string>();

  constructor(private readonly parts: RunDriverParts) {}

  get journal(): RunJournal {
    return this.parts.journal;
  }

  /** The limits `run` runs under: its agent's (the root's or its subagent's), host ceilings applied. */
  budgetsOf(run: RunRecord): RunBudgets {
    return profileOfRun(this.parts.profiles, run).budgets;
  }

  /** The root agent's tool table. */
  get table(): ToolTable {
    return this.parts.profiles.table;
  }

  /** The root agent and its subagents, each with its tool table. */
  get profiles(): AgentProfile {
    return this.parts.profiles;
  }

  /**
   * Drive the run; a second drive of the same run in this process (an approval
   * arriving while the turn is still pausing, a resume racing it) waits for the
   * first to reach its resting state, then acts on what the journal says.
   */
  async drive(runId: string, options: DriveOptions = {}): Promise<RunResult> {
    for (let running = this.active.get(runId); running; running = this.active.get(runId)) {
      await running.catch(() => undefined);
    }
    const driving = this.driveLeased(runId, options);
    this.active.set(runId, driving);
    let result: RunResult;
    try {
      result = await driving;
    } finally {
      if (this.active.get(runId) === driving) this.active.delete(runId);
    }
    if ((result.status === "completed" || result.status === "failed") && this.subagentRuns.has(runId)) await this.wakeParent(runId);
    return result;
  }

  /**
   * A subagent's run finished while its parent was paused waiting for it (the
   * child needed an approval or an answer): resume the parent, whose open
   * spawning call now finds the finished child. Also called by the runtime for
   * a parent a process left paused when it died between the two. A parent paused
   * for another reason (its own budget, a child it never waited on, another child
   * still waiting) is left to that decision. Whether the parent is (being) resumed
   * for this child: false when it was left as it was.
   */
  async wakeParent(childRunId: string): Promise<boolean> {
    const { state } = this.parts;
    const child = await state.runs.getRun(childRunId);
    const link = child?.input.parent;
    if (!link) return false;
    const parent = await state.runs.getRun(link.runId);
    // A parent still running is driving the child itself, inline: it takes the result from there.
    if (!parent || (parent.status !== "waiting_approval" && parent.status !== "waiting_input")) return false;
    if ((await state.runs.listToolCalls(parent.id)).some((call) => call.status === "waiting_approval" || call.status === "waiting_input")) return false;
    const events = await state.runs.listEvents(parent.id);
    // Paused on its own budget, the parent waits for a human's decision on it, whatever its children do.
    if (parent.status === "waiting_approval" && budgetPauseOf(events)) return false;
    if (!(await restsOnlyOnEndedChildren(state.runs, events, childRunId))) return false;
    // On the build the parent continues on, not the child's: a parent migrated while it waited goes on on its new build.
    const { driver, revision } = this.parts.driverFor ? await this.parts.driverFor(parent) : { driver: this as RunDriver, revision: undefined };
    // Another caller (a second answer, the recovery sweep, another replica) may wake it first: then there is nothing to do.
    await driver.drive(parent.id, {
      ...(revision !== undefined ? { revision } : {}),
      leaveIfTaken: true,
      beforeDriving: async (run) => {
        if (run.status !== "waiting_approval" && run.status !== "waiting_input") return false;
        await driver.journal.record(run.id, "subagent.resumed_parent", { childRunId, status: child!.status }, { run: { status: "running" } }, { expectedLastSeq: run.lastSeq });
        return true;
      },
    });
    return true;
  }

  private async driveLeased(runId: string, options: DriveOptions): Promise<RunResult> {
    const { state, ownerId, leaseTtlMs, journal } = this.parts;
    const created = options.created?.run.id === runId ? options.created : undefined;
    // Created leased to us, in the same write: no one else can have written to it since.
    const leasedAtCreation = created?.run.lease?.owner === ownerId ? created.run.lease : null;
    const granted: TakenRunLease | null = leasedAtCreation ?? (await state.runs.acquireRunLease(runId, ownerId, leaseTtlMs));
    if (!granted) {
      const run = await state.runs.getRun(runId);
      // A finished run takes no lease: nothing may write to it again.
      if (run && TERMINAL_RUN_STATUSES.includes(run.status)) {
        if (options.beforeDriving && !options.leaveIfTaken) {
          throw new AssemblyLineError("AL_ERR_RUN_NOT_RESUMABLE", `run ${runId} is ${run.status}; it waits for no decision or answer`, {
            fix: "Check `assembly-line runs show <id>`: a finished run cannot be resumed.",
          });
        }
        await journal.observe(runId);
        return await describeRun(state.runs, run);
      }
      if (run && options.leaveIfTaken) return await describeRun(state.runs, run);
      throw new AssemblyLineError("AL_ERR_RUN_NOT_RESUMABLE", `run ${runId} is leased by ${run?.lease?.owner ?? "another replica"} until ${run?.lease?.expiresAt ?? "?"}`, {
        fix: "Wait for that replica to finish, or for its lease to expire, then resume the run.",
      });
    }
    const fence = { owner: ownerId, token: granted.token };
    journal.holdFence(runId, fence);
    this.parts.driveWatch?.driveStarted(runId);
    const lease: LeaseWatch = { lost: false, modelCalls: new Map() };
    const markLost = () => {
      if (lease.lost) return;
      lease.lost = true;
      const abandoned = { running: [...lease.modelCalls].map(([key, startedAt]) => ({ key, startedAt })), held: journal.heldEvents(runId) };
      lease.onLost?.(leaseLost(runId));
      // At once, not when the drive ends: a tool that ignores the abort must not keep its span open.
      void this.parts.driveWatch?.driveStopped(runId, true, abandoned);
      this.parts.logger.warn({ runId, event: "run.lease_lost", token: fence.token }, "another replica took over this run; this process stops writing to it");
    };
    // Renews only the lease this drive holds (same token): a lease that was taken over
    // or released (the run finished elsewhere) is never taken again by the heartbeat.
    const heartbeat = setInterval(() => {
      state.runs
        .renewRunLease(runId, fence, leaseTtlMs)
        .then(async (renewed) => {
          if (renewed || lease.lost) return;
          // Still our lease: the run just finished under it (a finished run is not renewed), nothing was lost.
          const run = await state.runs.getRun(runId);
          if (!fenceHolds(run?.lease, fence)) markLost();
        })
        .catch((error: unknown) => this.parts.logger.warn({ runId, err: String(error) }, "lease heartbeat failed"));
    }, Math.max(50, Math.floor(leaseTtlMs / 3)));
    heartbeat.unref();
    try {
      // Under our lease only this drive changes the run (observers' position and hook failures aside):
      // one read serves the observers' catch-up and, when nothing is decided first, the drive.
      let current = leasedAtCreation ? created!.run : undefined;
      if (leasedAtCreation && created?.event) await journal.observe(runId, { observedSeq: created.run.observedSeq, events: [created.event] });
      else {
        current ??= await state.runs.getRun(runId);
        await journal.observe(runId, current ? { observedSeq: current.observedSeq, events: [] } : undefined);
      }
      if (options.beforeDriving && !(await options.beforeDriving((await state.runs.getRun(runId))!))) {
        return await describeRun(state.runs, (await state.runs.getRun(runId))!);
      }
      if (options.resumedBy) {
        const run = await state.runs.getRun(runId);
        if (run && (run.status === "running" || run.status === "queued")) {
          const lapsedAt = leaseLapsedAt(options.resumedBy.replacedLease !== undefined ? options.resumedBy.replacedLease : granted.replaced);
          await journal.record(runId, "run.resumed", { owner: ownerId, recovered: options.resumedBy.recovered, ...(lapsedAt ? { leaseLapsedAt: lapsedAt } : {}) });
        }
      }
      await this.step(runId, options, lease, options.beforeDriving || options.resumedBy ? undefined : current);
      // A fresh run's drive knows the record it left: no read back.
      const known = journal.ownWritesOf(runId)?.run();
      return await describeRun(state.runs, known ?? (await state.runs.getRun(runId))!);
    } catch (error) {
      if (isAssemblyLineError(error, "AL_ERR_RUN_LEASE_LOST")) markLost();
      throw error;
    } finally {
      clearInterval(heartbeat);
      journal.holdFence(runId, undefined);
      // Where observers are goes with the release, in one write. With the token: a lease another replica took meanwhile is never released by us.
      const observedSeq = await journal.forget(runId).finally(() => this.parts.driveWatch?.driveStopped(runId, lease.lost));
      await state.runs.releaseRunLease(runId, ownerId, fence.token, observedSeq === undefined ? undefined : { observedSeq }).catch((error: unknown) => {
        if (observedSeq !== undefined) this.parts.logger.warn({ runId, seq: observedSeq, err: String(error) }, "releasing the lease and recording where observers are failed; another process may deliver these events again");
      });
    }
  }

  private async step(runId: string, options: DriveOptions, lease: LeaseWatch, created: RunRecord | undefined): Promise<void> {
    const { state, manifest } = this.parts;
    const run = created ?? (await state.runs.getRun(runId))!;
    if (run.input.parent) this.subagentRuns.add(runId);
    if (run.status === "completed" || run.status === "failed" || run.status === "waiting_approval" || run.status === "waiting_input") return;
    const revision = options.revision ?? run.agentRevision;
    if (revision !== manifest.agentRevision) {
      throw new AssemblyLineError("AL_ERR_CONTINUATION_VERSION", `run ${runId} belongs to revision ${revision}; this driver runs ${manifest.agentRevision}`, {
        fix: "Resume it from a host running the build of that revision.",
      });
    }
    let started: StartedData;
    const fresh = run.status === "queued";
    // A queued run has no steps, tool calls or checkpoint, and under our lease only we add them.
    if (fresh) this.parts.journal.trackOwnWrites(run);
    // A run its caller cancelled before it started never starts (no resolver, model or tool runs for it):
    // it fails with the abort's reason, as a run cancelled mid-turn does.
    if (options.signal?.aborted) {
      const reason: unknown = options.signal.reason;
      // A subagent stopped by its parent's pause before it started: left as it is, for the approved replay to drive.
      if (leftForParentsReplay(run, reason)) return;
      await this.failRun(runId, reason, isAssemblyLineError(reason) ? reason.code : undefined);
      return;
    }
    // A drive that died between writing the run's turn into its conversation and recording the run's end left
    // its reply in the history: the run ends with that reply, not with a new model call's, which would differ.
    if (options.resumedBy && run.conversationId) {
      const reply = await this.replyInHistory(run, run.conversationId);
      if (reply !== undefined) {
        await this.complete(run, reply, { turnWritten: true });
        return;
      }
    }
    try {
      started = fresh ? await this.start(run, options.forcedModel) : await this.startedData(run);
    } catch (error) {
      if (isInfrastructureFailure(error)) throw error;
      await this.failRun(runId, error, isAssemblyLineError(error) ? error.code : "AL_ERR_RESOLVER_FAILED");
      return;
    }
    // Starting changed only the run's status and model, which the turn reads from `started`.
    await this.turn(fresh ? run : (await state.runs.getRun(runId))!, started, options.signal, lease, fresh);
  }

  /** Resolve capabilities (recorded before applied) and mark the run started. */
  private async start(run: RunRecord, forcedModelOption: string | undefined): Promise<StartedData> {
    const { sourceBundle, hooks, manifest } = this.parts;
    const profile = profileOfRun(this.parts.profiles, run);
    if (profile.path !== "") return this.startSubagent(run, profile);
    // A queued run's host forced its model (even the agent's own) when it says so; one created before
    // runs said so was forced when its model is not the agent's.
    const forcedModel = forcedModelOption ?? (run.input.modelForced === true || run.modelSpec !== manifest.agent.model ? run.modelSpec : undefined);
    const resolverCtx = {
      runId: run.id,
      agentId: manifest.agent.id,
      message: run.input.message,
      metadata: run.input.metadata,
      ...(run.conversationId ? { conversationId: run.conversationId } : {}),
      ...(run.input.channel ? { channel: { name: run.input.channel.name, ...(run.input.channel.metadata ? { metadata: run.input.channel.metadata } : {}) } } : {}),
    };
    // Nothing to resolve (no resolvers.ts, no plugin's resolveRun tap): the authored defaults, with no wait to bound.
    const declaration = sourceBundle.resolver || reachesAnyone(hooks.resolveRun) ? await this.resolvedDeclaration(run, resolverCtx) : null;
    const malformed = declarationProblem(declaration);
    if (malformed) {
      throw new AssemblyLineError("AL_ERR_RESOLVER_FAILED", `the resolver for run ${run.id} returned no usable declaration: ${malformed}`, {
        fix: "Return { model?, instructions?, defaultTools? } (a model name, text, tool names), or null to keep the authored defaults.",
      });
    }
    const unusable = declaration?.defaultTools ? defaultToolsProblem(this.parts.profiles.table, declaration.defaultTools) : null;
    if (unusable) {
      // A resolver's tool list is load-bearing: honour it fully or fail, never drop a name silently.
      throw new AssemblyLineError("AL_ERR_DEFAULT_TOOL_UNKNOWN", `resolvers.ts defaultTools for run ${run.id}: ${unusable}`, {
        fix: "Return only tools this agent has and this host can run (see `assembly-line build` output and the sandbox configuration).",
      });
    }
    const started: StartedData = {
      modelSpec: forcedModel ?? declaration?.model ?? run.modelSpec,
      instructions: [manifest.agent.instructions, declaration?.instructions].filter((part) => part && part.trim()).join("\n\n"),
      defaultTools: declaration?.defaultTools ?? null,
    };
    const skillChanges = await this.parts.skillLibrary(profile).syncSeeds();
    // Nothing acts on the start until the run's next append, so it commits with that one.
    await this.parts.journal.hold(
      run.id,
      [
        ...skillChanges.map((change) => ({ type: change.type, data: change.data as unknown as Record<string, JsonValue> })),
        { type: "run.capabilities_resolved", data: { declaration: (declaration ?? null) as JsonValue, forcedModel: forcedModel ?? null } },
        // Held, it is stamped when it commits (after the first model call): the budget's maxDurationMs counts from `startedAt`.
        { type: "run.started", data: { ...started, startedAt: isoTimestamp() } as unknown as Record<string, JsonValue> },
      ],
      { run: { status: "running", modelSpec: started.modelSpec } },
    );
    return started;
  }

  /** A subagent's run: its own instructions and model; resolvers are the root agent's business. */
  private async startSubagent(run: RunRecord, profile: AgentProfile): Promise<StartedData> {
    const started: StartedData = { modelSpec: run.modelSpec, instructions: profile.instructions, defaultTools: null };
    await this.parts.journal.append(run.id, [{ type: "run.started", data: { ...started, subagent: profile.path, parentRunId: run.input.parent?.runId ?? null } as unknown as Record<string, JsonValue> }], {
      run: { status: "running" },
    });
    return started;
  }

  /** What resolvers.ts and the plugins' resolveRun taps declare for the run, within resolverTimeoutMs. */
  private async resolvedDeclaration(run: RunRecord, resolverCtx: RunResolverContext): Promise<RunCapabilityDeclaration | null> {
    const { sourceBundle, hooks } = this.parts;
    // Which part threw, so the failure names it: resolvers.ts, then the plugins' resolveRun taps.
    let inPluginTaps = false;
    const resolving = (async () => {
      const authored = (await sourceBundle.resolver?.resolve(resolverCtx)) ?? null;
      inPluginTaps = true;
      return hooks.resolveRun.promise(authored, resolverCtx);
    })();
    // One that settles after the run failed for its time settles unheard.
    resolving.catch(() => undefined);
    const { resolverTimeoutMs } = this.parts;
    let timedOut: Error | undefined;
    const late = () =>
      (timedOut = new AssemblyLineError("AL_ERR_RESOLVER_FAILED", `the resolver for run ${run.id} did not settle within ${resolverTimeoutMs} ms (RuntimeOptions.resolverTimeoutMs)`, {
        fix: "Make resolvers.ts (and any plugin's resolveRun tap) resolve or reject in time: check for a request without a timeout.",
      }));
    try {
      return await withinTimeout(resolving, resolverTimeoutMs, `resolving run ${run.id}`, late);
    } catch (error) {
      // A resolver that throws undefined has not timed out (timedOut is still undefined).
      if (timedOut !== undefined && error === timedOut) throw error;
      // Anything may be thrown (a string, null): say what it was rather than read a message it lacks.
      const thrown = error instanceof Error ? error.message : String(error);
      if (inPluginTaps) {
        // hooks.ts names the tap and its plugin, with its fix (not when the tap threw an AssemblyLineError of its own).
        const named = isAssemblyLineError(error, "AL_ERR_HOOK_TAP") ? error : undefined;
        throw new AssemblyLineError("AL_ERR_RESOLVER_FAILED", `a plugin's resolveRun tap threw for run ${run.id}: ${named ? errorSummary(named) : thrown}`, {
          fix: named?.fix ?? "Fix the plugin whose resolveRun tap threw, or leave it out of the host's plugins.",
          cause: error,
        });
      }
      throw new AssemblyLineError("AL_ERR_RESOLVER_FAILED", `resolvers.ts threw for run ${run.id}: ${thrown}`, {
        fix: "A resolver is load-bearing: fix it or return null to keep the authored defaults.",
        cause: error,
      });
    }
  }

  private async startedData(run: RunRecord): Promise<StartedData> {
    const events: RunEvent[] = await this.parts.state.runs.listEvents(run.id);
    const started = events.find((event) => event.type === "run.started");
    if (!started) throw new AssemblyLineError("AL_ERR_RUN_NOT_RESUMABLE", `run ${run.id} is running but has no run.started event`);
    return started.data as unknown as StartedData;
  }

  private async turn(run: RunRecord, started: StartedData, signal: AbortSignal | undefined, lease: LeaseWatch, fresh: boolean): Promise<void> {
    const controller = new AbortController();
    // The caller's signal may outlive the run (one for many runs): its listener goes with the turn.
    const forwardAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener("abort", forwardAbort, { once: true });
    // No event comes for an abort before the listener (while the resolver ran): the turn starts aborted.
    if (signal?.aborted) forwardAbort();
    try {
      await this.turnUnder(controller, run, started, lease, fresh);
    } finally {
      signal?.removeEventListener("abort", forwardAbort);
    }
  }

  private async turnUnder(controller: AbortController, run: RunRecord, started: StartedData, lease: LeaseWatch, fresh: boolean): Promise<void> {
    const { state, journal, hooks, logger } = this.parts;
    await this.parts.beforeTurn?.();
    const profile = profileOfRun(this.parts.profiles, run);
    const table = profile.table;
    const library = this.parts.skillLibrary(profile);
    // A fresh run has only its creation and start behind it: no activations, no loaded skills.
    const events = fresh ? [] : await state.runs.listEvents(run.id);
    // Tools activated earlier in the run (tool_describe, skills) are offered again on a resume.
    const activated = activatedToolNames(events)
      .map((name) => table.get(name))
      .filter((entry): entry is ToolTableEntry => entry !== undefined && entry.mode !== "disabled" && entry.available);
    const offered = [...visibleTools(table, started.defaultTools, { discovery: this.parts.alwaysOfferDiscovery === true })];
    for (const entry of activated) if (!offered.includes(entry)) offered.push(entry);
    lease.onLost = (reason) => controller.abort(reason);
    const services = this.parts.services(run, !fresh);
    // Skills loaded earlier in the run: the procedures it loaded go back into the context (their tools came back above).
    const activeSkills = await activeSkillsOf(events, library);
    // Made with `new`, not as object literals: see DriveScope.
    const skills = new RunSkills(library, () => scope, Array.isArray(started.defaultTools));
    const scope: RunScope = new DriveScope(
      run.id,
      run.agentRevision,
      state.runs,
      journal,
      table,
      new Set(offered.map((entry) => entry.name)),
      skills,
      controller.signal,
      services,
      run.input.channel
        ? {
            name: run.input.channel.name,
            ...(run.conversationId ? { conversationId: run.conversationId } : {}),
            ...(run.input.channel.metadata ? { metadata: run.input.channel.metadata } : {}),
          }
        : undefined,
      logger,
      lease,
      // Conversation budgets count the run's root agent's calls only, even over a store that ignores agentId.
      await RunBudget.load(run, profile.budgets, { runs: state.runs, usage: agentUsage(state.usage, logger), logger }, { fresh, delegates: profile.subagents.size > 0 }),
    );
    // maxDurationMs holds while a call runs too: checked before each call, and a call still running when it is
    // reached (a model stream that stalls after its headers, a tool that never returns) is stopped then.
    const durationLeft = scope.budget.durationLeftMs();
    const durationTimer = durationLeft !== undefined && durationLeft > 0 && durationLeft <= MAX_TIMER_MS ? setTimeout(() => controller.abort(scope.budget.durationReached()), durationLeft) : undefined;
    try {
      const info = {
        runId: run.id,
        agentId: profile.agentId,
        metadata: run.input.metadata,
        ...(run.conversationId ? { conversationId: run.conversationId } : {}),
        // Without `delivery`: the reply's secrets never reach a context policy, let alone the model.
        ...(run.input.channel ? { channel: { name: run.input.channel.name, ...(run.input.channel.metadata ? { metadata: run.input.channel.metadata } : {}) } } : {}),
      };
      const deferred = scope.visible.has("tool_search") ? table.searchable().filter((entry) => !scope.visible.has(entry.name)) : [];
      // Catalogs only for a tool the model can reach this run: not one the host disabled or a resolver left out.
      const reachable = (name: string) => scope.visible.has(name) || deferred.some((entry) => entry.name === name);
      const catalog = reachable("load_skill") ? (await library.list()).map((skill) => ({ name: skill.name, description: skill.description })) : [];
      const built = await buildModelContext(
        profile.context,
        {
          instructions: started.instructions,
          message: run.input.message,
          tools: offered.map(toModelToolSpec),
          deferred: deferred.map((entry) => ({ name: entry.name, namespace: entry.namespace })),
          // The history of the agent the run records, never another agent's in a shared store.
          conversations: agentConversations(state.conversations, run.agentId, state.runs, logger),
          filesystem: services.filesystem,
          skills: catalog,
          activeSkills,
          subagents: reachable("spawn_subagent") ? [...profile.subagents.values()].map((child) => ({ name: child.name, description: child.description ?? "" })) : [],
        },
        info,
      );
      const context = await hooks.context.promise(built, info);
      scope.offered = context.tools;
      const own = journal.ownWritesOf(run.id);
      const checkpoint = own ? own.latestCheckpoint() : await state.runs.getCheckpoint(run.id);
      const harness = await this.parts.selectHarness(started.modelSpec, run.id);
      const harnessCtx: HarnessContext = {
        runId: run.id,
        signal: controller.signal,
        callTool: async (call) => {
          if (lease.lost) throw leaseLost(run.id);
          // A cancelled run starts no further tool call, whatever the engine makes of the rest of its reply.
          controller.signal.throwIfAborted();
          const outcome = await callTool(scope, call);
          if (outcome.status === "failed") controller.abort(new Error(outcome.output.error));
          return outcome;
        },
        step: (key, fn, options) => runStep(scope, `${ENGINE_STEP_PREFIX}${key}`, fn, options),
        // A model call acts on nothing outside: its result commits with the next append (the tool call it asks for, or the run's end).
        modelCall: async (key, fn, options) => {
          const startedAt = isoTimestamp();
          const stepKey = `${ENGINE_STEP_PREFIX}${key}`;
          lease.modelCalls.set(stepKey, startedAt);
          try {
            const beforeRunning = () => {
              // A cancelled run makes no further model call, as it starts no further tool call; a replayed one costs nothing and is returned.
              controller.signal.throwIfAborted();
              return scope.budget.beforeModelCall();
            };
            return await runStep(scope, stepKey, fn, { ...options, metadata: { ...options?.metadata, modelCall: true } }, beforeRunning, { hold: true });
          } catch (error) {
            // A failed call completes no step: `model.failed` is its only record (telemetry's failed chat span).
            if (!isInfrastructureFailure(error) && !lease.lost) await journal.hold(run.id, [modelFailed(stepKey, startedAt, error)]);
            throw error;
          } finally {
            lease.modelCalls.delete(stepKey);
          }
        },
        emit: async (type, data) => {
          // Inside a step body (a model call) the event commits with the step's completion.
          if (holdForStep({ type, data: dropUndefined(data ?? {}) })) return;
          await journal.record(run.id, type, data ?? {});
        },
        textDelta: (delta) => this.parts.textDelta(run.id, delta),
        textRestart: () => this.parts.textRestart?.(run.id),
        recordUsage: async (usage) => {
          try {
            await state.usage.recordUsage({ ...usage, runId: run.id, conversationId: budgetConversationOf(run), agentId: run.agentId, createdAt: isoTimestamp() });
          } catch (error) {
            logger.warn({ runId: run.id, err: String(error), event: "usage.degraded" }, "usage could not be recorded");
          }
        },
        logger,
      };
      const result = await harness.runTurn(
        {
          runId: run.id,
          agentRevision: run.agentRevision,
          modelSpec: started.modelSpec,
          context,
          ...(checkpoint ? { continuation: checkpoint.continuation as never } : {}),
          ...(profile.path ? { subagent: profile.path } : {}),
        },
        harnessCtx,
      );
      // Another replica owns the run now: its journal, not this turn's result, decides what happens next.
      if (lease.lost) throw leaseLost(run.id);
      // An engine that swallowed the refusal still ends the run over budget.
      if (scope.budget.exceeded) {
        await this.failOverBudget(run.id, scope.budget.exceeded, profile.budgets);
        await services.releaseSandbox();
        return;
      }
      if (scope.failure) {
        await this.failRun(run.id, new Error(scope.failure.message), scope.failure.code);
        await services.releaseSandbox();
        return;
      }
      // The lease, the duration budget and a failed tool are handled above: what aborted the turn now is its caller.
      // A cancelled run fails with the abort's reason, whatever the engine made of the abort.
      if (controller.signal.aborted) {
        const reason: unknown = controller.signal.reason;
        // Its parent paused (its maxDurationMs under onExceeded "pause"): left as a crash leaves it, its sandbox
        // kept and its lease released with the drive, for the parent's approved replay of the spawn to drive on.
        if (leftForParentsReplay(run, reason)) return;
        await this.failRun(run.id, reason, isAssemblyLineError(reason) ? reason.code : undefined);
        await services.releaseSandbox();
        return;
      }
      if (result.status === "completed") {
        await this.complete(run, result.response.text);
        await services.releaseSandbox();
        return;
      }
      const waiting = scope.pausedFor === "input" ? "waiting_input" : "waiting_approval";
      await journal.record(
        run.id,
        `run.${waiting}`,
        { harness: harness.name },
        { run: { status: waiting }, checkpoint: { runId: run.id, continuation: result.continuation as unknown as JsonValue, createdAt: isoTimestamp() } },
      );
    } catch (error) {
      if (isInfrastructureFailure(error) || lease.lost) throw error;
      if (scope.budget.exceeded) await this.failOverBudget(run.id, scope.budget.exceeded, profile.budgets);
      else if (scope.failure) await this.failRun(run.id, new Error(scope.failure.message), scope.failure.code);
      // Stopped with its parent's pause: left as above, whatever the engine threw on the abort.
      else if (controller.signal.aborted && leftForParentsReplay(run, controller.signal.reason)) return;
      else await this.failRun(run.id, error, isAssemblyLineError(error) ? error.code : undefined);
      await services.releaseSandbox();
    } finally {
      clearTimeout(durationTimer);
    }
  }

  /**
   * The reply of `run`'s turn in its conversation's history, when it is there. Found by the run's id,
   * however many turns the conversation took since: read in growing windows from the newest, the turn
   * being written when the run ended. Read only when a run is resumed, never on a run's first drive.
   */
  private async replyInHistory(run: RunRecord, conversationId: string): Promise<string | undefined> {
    for (let limit = RECENT_TURN_WINDOW; ; limit *= 4) {
      // The store's own listing: a run id names one run, so no other agent's message can match it.
      const listed = await this.parts.state.conversations.listConversationMessages(conversationId, { limit, agentId: run.agentId });
      const reply = listed.findLast((message) => message.runId === run.id && message.role === "assistant");
      if (reply) return reply.content;
      if (listed.length < limit) return undefined;
    }
  }

  private async complete(run: RunRecord, text: string, options: { turnWritten?: boolean } = {}): Promise<void> {
    const { journal, state } = this.parts;
    if (run.conversationId && !options.turnWritten) {
      // The turn is the history of the agent the run records (a subagent's own id), so another agent
      // serving the same conversation id never lists it.
      const conversations = agentConversations(state.conversations, run.agentId, state.runs, this.parts.logger);
      // Written before the completion record, so a crash in between cannot lose the turn from the history;
      // a resume finds it there (replyInHistory) and ends the run with it. Among the newest messages it is
      // skipped here too, for a crashed run driven again by other than a resume.
      const recent = await conversations.listConversationMessages(run.conversationId, { limit: RECENT_TURN_WINDOW });
      if (!recent.some((message) => message.runId === run.id)) {
        const createdAt = isoTimestamp();
        await conversations.appendConversationMessages(run.conversationId, [
          { role: "user", content: run.input.message, runId: run.id, createdAt },
          { role: "assistant", content: text, runId: run.id, createdAt },
        ]);
      }
    }
    // A run that came from a channel owes it the reply (unless the channel reads it from the run): one delivery per run, by id.
    const delivery =
      run.input.channel && this.parts.owesDelivery(run.input.channel.name)
        ? { id: `dlv_${run.id}`, channel: run.input.channel.name, conversationId: run.conversationId, payload: { runId: run.id, text } }
        : undefined;
    await journal.record(run.id, "run.completed", { text }, { run: { status: "completed", output: { text } }, checkpoint: null, ...(delivery ? { delivery } : {}) });
  }

  /**
   * `budget.exceeded` and what it causes are one record: the failure, or with
   * `onExceeded: "pause"` a pause for a human. The pause keeps the last
   * checkpoint: approving re-drives the turn from it, replaying every journaled
   * model call and tool call up to the one the budget refused.
   */
  private async failOverBudget(runId: string, exceeded: BudgetExceeded, budgets: RunBudgets): Promise<void> {
    if (budgets.onExceeded === "pause") {
      this.parts.logger.info({ runId, ...exceeded }, "run reached a budget; paused for a decision");
      await this.parts.journal.append(
        runId,
        [
          { type: "budget.exceeded", data: { ...exceeded, action: "pause" } },
          { type: "run.waiting_approval", data: { budget: { ...exceeded } } },
        ],
        { run: { status: "waiting_approval" } },
      );
      return;
    }
    const error = budgetExceededError(runId, exceeded);
    this.parts.logger.warn({ runId, code: error.code, ...exceeded }, "run reached a budget");
    const delivery = await this.failureDelivery(runId, error.code);
    await this.parts.journal.append(
      runId,
      [
        { type: "budget.exceeded", data: { ...exceeded, action: "fail" } },
        { type: "run.failed", data: { error: error.message, code: error.code } },
      ],
      { run: { status: "failed", error: { message: error.message, code: error.code } }, checkpoint: null, ...(delivery ? { delivery } : {}) },
    );
  }

  async failRun(runId: string, error: unknown, code?: string): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    // The text may quote user input and secrets: logged only when the captureContent spans follow allows content.
    this.parts.logger.warn({ event: "run.failed", runId, code, ...loggedErrorText(message, this.parts.captureContent) }, "run failed");
    const delivery = await this.failureDelivery(runId, code ?? null);
    await this.parts.journal.record(
      runId,
      "run.failed",
      { error: message, code },
      { run: { status: "failed", error: { message, ...(code ? { code } : {}) } }, checkpoint: null, ...(delivery ? { delivery } : {}) },
    );
  }

  /**
   * The failure delivery a failed run owes its channel, when the channel takes one: written with
   * `run.failed`, so the user is told (say, "thinking..." replaced) instead of waiting for good.
   */
  private async failureDelivery(runId: string, code: string | null): Promise<NewDelivery | undefined> {
    const run = await this.parts.state.runs.getRun(runId);
    return run ? this.failureDeliveryOf(run, code) : undefined;
  }

  failureDeliveryOf(run: RunRecord, code: string | null): NewDelivery | undefined {
    if (!run.input.channel || !this.parts.owesFailureDelivery(run.input.channel.name)) return undefined;
    return { id: `dlv_${run.id}`, channel: run.input.channel.name, conversationId: run.conversationId, payload: { runId: run.id, outcome: "failed", code } };
  }
}

/**
 * Whether a paused parent rests on `childRunId` (it recorded `subagent.waiting` for it and has not
 * taken its end) and on no child that is still going: woken while another child it waits on still
 * waits (or is being driven), its turn would only pause again, or race that child's own wake.
 */
async function restsOnlyOnEndedChildren(runs: RunStore, parentEvents: RunEvent[], childRunId: string): Promise<boolean> {
  const taken = new Set(parentEvents.filter((event) => event.type === "subagent.completed").map((event) => String(event.data.childRunId)));
  const waitedOn = new Set(parentEvents.filter((event) => event.type === "subagent.waiting").map((event) => String(event.data.childRunId)).filter((id) => !taken.has(id)));
  if (!waitedOn.has(childRunId)) return false;
  for (const otherRunId of waitedOn) {
    if (otherRunId === childRunId) continue;
    const other = await runs.getRun(otherRunId);
    if (other && !TERMINAL_RUN_STATUSES.includes(other.status)) return false;
  }
  return true;
}

/** How many of a conversation's newest messages are read first for a run's own turn. */
const RECENT_TURN_WINDOW = 20;

/** A model call that threw (provider error, lost connection, budget refusal): which call, since when, and its code or error class. */
function modelFailed(key: string, startedAt: string, error: unknown): { type: string; data: Record<string, JsonValue> } {
  const data: Record<string, JsonValue> = { key, startedAt, error: storableText(error instanceof Error ? error.message : String(error)) };
  if (isAssemblyLineError(error)) data.code = error.code;
  else if (error instanceof Error) data.errorClass = error.name;
  return { type: "model.failed", data };
}

/**
 * Whether a run stopped with `reason` is left as a crash leaves it rather than failed: only a subagent run the
 * spawner stopped because its parent paused (parent-paused.ts), which the parent's approved replay of the spawn
 * drives on. A drive any other caller's signal stopped fails with the abort's reason, whatever that reason is.
 */
function leftForParentsReplay(run: RunRecord, reason: unknown): boolean {
  return run.input.parent !== undefined && isParentPausedStopOf(reason, run.id);
}

/**
 * When the work of the drive a resume takes over stopped, at the latest: when its lease lapsed, or now if the
 * store handed it over sooner (its holder gone). The budget counts the time before it as active (a tool call a
 * crash cut was at work until then), so a run that crashes its process over and over still reaches its
 * `maxDurationMs`. Undefined without a lease replaced: the run was released (a shutdown) or never leased.
 */
function leaseLapsedAt(replaced: Lease | null | undefined): string | undefined {
  const expiresAt = replaced ? Date.parse(replaced.expiresAt) : Number.NaN;
  return Number.isNaN(expiresAt) ? undefined : new Date(Math.min(expiresAt, Date.now())).toISOString();
}
