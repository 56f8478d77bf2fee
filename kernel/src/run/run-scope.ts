import type {
  AutomationManager,
  BlobStore,
  ChannelView,
  MemoryApi,
  RunStore,
  RuntimeLogger,
  Sandbox,
  SubagentRequest,
  JsonValue,
  ModelToolSpec,
  SelfImprovementApi,
} from "@assemblyline-agents/core";
import type { RuntimeFilesystem } from "../filesystem/runtime-filesystem.js";
import type { SkillChangeJournal, SkillStepRunner } from "../skills/durable-skill-change.js";
import type { RunBudget } from "./budget.js";
import type { ChangeGate } from "./change-approval.js";
import type { RunJournal } from "./journal.js";
import type { ToolTable } from "./tool-table.js";
import type { SkillActivation } from "./run-access.js";

/** Services a run's tools may reach, each present only when the host configured it. */
export interface RunServices {
  getSandbox(): Promise<Sandbox>;
  memory?: MemoryApi;
  blob?: BlobStore;
  /** ctx.resources: RuntimeOptions.resources, when the host passed them. */
  resources?: Record<string, unknown>;
  /**
   * ctx.spawnSubagent for the tool call `callId`: its `spawnIndex`-th spawn (from 0), in call order.
   * `signal`: the run's (the call's `ctx.signal`), aborted when the run stops waiting for the call; the child stops with it.
   */
  spawnSubagent(request: SubagentRequest, callId: string, spawnIndex: number, signal?: AbortSignal): Promise<JsonValue>;
  /** ctx.selfImprovement, when agent.ts makes skills writable. */
  selfImprovement?: SelfImprovementApi;
  /**
   * The filesystem and skill API for one tool call, when skills are writable: its
   * approval of a skill write (selfImprovement.writeApproval) and its steps
   * (`step`), in which each skill change is journaled; the run-wide ones otherwise.
   */
  forCall?(call: { id: string; approved: boolean; step: SkillStepRunner }): { filesystem: RuntimeFilesystem; selfImprovement?: SelfImprovementApi };
  /** The runtime filesystem the built-in file tools use. */
  filesystem: RuntimeFilesystem;
  /**
   * ctx.automationManager, when agent.ts enables dynamic automations; `gate(required)` asks for approval of a change;
   * `journal`: the tool call's steps, in which each change is journaled.
   */
  automationManager?(gate: (required: boolean) => ChangeGate, journal: SkillChangeJournal): AutomationManager;
  /**
   * ctx.connectionManager, when agent.ts enables dynamic connections and a connections plugin provides it;
   * `journal`: the tool call's steps, in which each change is journaled.
   */
  connectionManager?(gate: (required: boolean) => ChangeGate, journal: SkillChangeJournal): unknown;
  /** ctx.connections: the resolved connections. */
  connections?: Record<string, unknown>;
  /**
   * Release the run's sandbox (best effort): called at completion and failure.
   * Also when this drive did not acquire it, if the run was driven before (a
   * resume, a recovery): an earlier drive, in this process or another, may have.
   */
  releaseSandbox(): Promise<void>;
}

/**
 * A run's services, made with `new` rather than as an object literal, for the
 * reason DriveScope gives (behind the Node host, V8 pretenured the literal this
 * replaced): the members every run has in the constructor, the optional ones set
 * after it.
 */
export class RunServicesRecord implements RunServices {
  memory?: MemoryApi;
  blob?: BlobStore;
  resources?: Record<string, unknown>;
  selfImprovement?: SelfImprovementApi;
  forCall?: RunServices["forCall"];
  automationManager?: RunServices["automationManager"];
  connectionManager?: RunServices["connectionManager"];
  connections?: Record<string, unknown>;

  constructor(
    readonly getSandbox: () => Promise<Sandbox>,
    readonly spawnSubagent: RunServices["spawnSubagent"],
    readonly filesystem: RuntimeFilesystem,
    readonly releaseSandbox: () => Promise<void>,
  ) {}
}

/** Everything one execution of one run shares. */
export interface RunScope {
  runId: string;
  agentRevision: string;
  runs: RunStore;
  journal: RunJournal;
  table: ToolTable;
  /** Names the model is offered in this run; grows when tools are activated (tool-activation.ts). */
  visible: Set<string>;
  /** The tool list the engine was given (`context.tools`): activation appends to it. */
  offered: ModelToolSpec[];
  /** What load_skill reaches: activates a skill for the rest of the run. */
  skills: SkillActivation;
  signal: AbortSignal;
  services: RunServices;
  channel: ChannelView | undefined;
  logger: RuntimeLogger;
  /** Set when a tool threw: the run fails once the engine ends its turn. */
  failure: { code?: string; message: string } | null;
  /** Whether this process still holds the run's lease (the heartbeat clears it). */
  lease: { lost: boolean };
  /** The run's budgets, counted from its durable records. */
  budget: RunBudget;
  /** What the first paused call waits for: the run's status once the engine returns its continuation. */
  pausedFor?: "approval" | "input";
}

/**
 * A run's scope, made with `new` rather than as an object literal. V8 pretenures an
 * object literal's allocation site once most of what it allocates outlives a young
 * collection, as each run's scope does with many runs in flight: every scope after
 * that starts in the old generation, and until the next full collection it keeps
 * what it reaches (the run's services, tools, budget) alive through every young
 * collection, long after its run ended. Objects made with `new` are not tracked by
 * allocation site, so they start young like the rest of the run.
 */
export class DriveScope implements RunScope {
  offered: ModelToolSpec[] = [];
  failure: { code?: string; message: string } | null = null;
  pausedFor?: "approval" | "input";

  constructor(
    readonly runId: string,
    readonly agentRevision: string,
    readonly runs: RunStore,
    readonly journal: RunJournal,
    readonly table: ToolTable,
    readonly visible: Set<string>,
    readonly skills: SkillActivation,
    readonly signal: AbortSignal,
    readonly services: RunServices,
    readonly channel: ChannelView | undefined,
    readonly logger: RuntimeLogger,
    readonly lease: { lost: boolean },
    readonly budget: RunBudget,
  ) {}
}
