import type { AutomationManager } from "./automation.js";
import type { BlobStore } from "./blob.js";
import type { ConnectionInfo, ConnectionManager } from "./connection.js";
import type { JsonSchema, JsonValue } from "./json.js";
import type { Sandbox } from "./sandbox.js";

export interface AskQuestionOptions {
  /** Suggested answers a channel may render as buttons. */
  choices?: string[];
  /** Free-form data carried with the question to the channel. */
  metadata?: Record<string, JsonValue>;
}

export interface StepOptions {
  /** Recorded with the step's events for audits and replays. */
  metadata?: Record<string, JsonValue>;
}

/** Durable agent memory under the `/memory` root. */
export interface MemoryApi {
  read(args: { path: string }): Promise<string>;
  write(args: { path: string; content: string }): Promise<void>;
  list(args?: { prefix?: string }): Promise<string[]>;
  delete(args: { path: string }): Promise<void>;
}

export interface SubagentRequest {
  /** The folder name under the calling agent's subagents/. */
  name: string;
  task: string;
  /** A JSON Schema the child's final output must match, or a prose description of it. */
  expectedOutput?: string | JsonSchema;
  constraints?: string[];
}

/** A skill as `ctx.selfImprovement` returns it. */
export interface SkillSummary {
  name: string;
  description: string;
  /** Tools loading it activates. */
  tools: string[];
  /** The procedure: SKILL.md without its front matter. */
  body: string;
  /** Every file of the skill folder by relative path, SKILL.md included. */
  files: Record<string, string>;
  digest: string;
  /** Who made the current content. */
  changedBy: "seed" | "agent" | "user";
  /** Set when a redeploy brought a seed that was not applied because the skill had changed. */
  conflict: { seedDigest: string; seedRevision: string; detectedAt: string } | null;
}

export interface SkillDraft {
  name: string;
  description: string;
  body: string;
  tools?: string[];
  /** Resource files besides SKILL.md, by relative path (e.g. `references/style.md`). */
  files?: Record<string, string>;
}

/** What a skill write changed: the skill's digest before and after (null: absent). */
export interface SkillChange {
  name: string;
  before: string | null;
  after: string | null;
}

/** `ctx.selfImprovement`: present only when agent.ts sets `selfImprovement: { writable: true }`. */
export interface SelfImprovementApi {
  list(): Promise<SkillSummary[]>;
  get(name: string): Promise<SkillSummary | undefined>;
  /** Create a new skill; refused (AL_ERR_SKILL_CONFLICT) when one by that name exists. */
  create(draft: SkillDraft): Promise<SkillChange>;
  /** Change some of a skill's parts; files given replace those paths, others stay. */
  update(change: Partial<Omit<SkillDraft, "name">> & { name: string }): Promise<SkillChange>;
  delete(name: string): Promise<SkillChange>;
}

/** The channel a run came from, as tools may see it. */
export interface ChannelView {
  name: string;
  conversationId?: string;
  metadata?: Record<string, JsonValue>;
}

/** What `execute(input, ctx)` receives. */
export interface ToolExecutionContext {
  /** Identity of the current run. */
  readonly runId: string;
  /** The compiled revision the run executes. */
  readonly agentRevision: string;
  /** This tool call's id, stable across resumes. */
  readonly toolCallId: string;
  /** The tool's name as the model called it. */
  readonly toolName: string;
  /** true when this call has passed the runtime approval gate. */
  readonly approvedToolCall: boolean;
  /** Aborted when the run is cancelled or the host shuts down. */
  readonly signal: AbortSignal;
  /** Suspend the run to ask the user; the answer becomes this call's result. Code after it never runs in this call. */
  askQuestion(question: string, options?: AskQuestionOptions): Promise<never>;
  /** Record a durable run event. */
  emit(eventType: string, data?: Record<string, JsonValue | undefined>): Promise<void>;
  /** Stable per-run, per-tool-call dedupe key for external writes. */
  idempotencyKey(scope: string): string;
  /** Completed-step replay cache: a completed step returns its persisted result instead of running again. */
  step<T>(key: string, fn: () => T | Promise<T>, options?: StepOptions): Promise<T>;
  /** Acquire the run sandbox for isolated file/shell work (lazily created). */
  getSandbox(): Promise<Sandbox>;
  /** Blob storage, when the host configured one. */
  readonly blob?: BlobStore;
  /** Durable memory, when the host configured one. */
  readonly memory?: MemoryApi;
  /** The host's own clients and handles (RuntimeOptions.resources), when it passed any. */
  readonly resources?: Record<string, unknown>;
  /** Run a compiled subagent. */
  spawnSubagent(request: SubagentRequest): Promise<JsonValue>;
  /** Resolved connections. */
  readonly connections: Record<string, ConnectionInfo>;
  /** The originating channel view. */
  readonly channel?: ChannelView;
  /** Skill authoring; present only when agent.ts sets selfImprovement.writable. */
  readonly selfImprovement?: SelfImprovementApi;
  /** Present only when agent.ts enables dynamic automations. */
  readonly automationManager?: AutomationManager;
  /** Present only when agent.ts enables dynamic connections. */
  readonly connectionManager?: ConnectionManager;
}
