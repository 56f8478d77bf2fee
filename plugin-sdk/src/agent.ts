import { brand, hasBrand, type Branded } from "./brand.js";
import type { RunBudgets } from "./budget.js";
import type { JsonSchema } from "./json.js";
import type { ContextPolicy } from "./model-context.js";
import type { CoreToolPolicy } from "./tool.js";

export interface SelfImprovementPolicy {
  writable?: boolean;
  writeApproval?: boolean;
}

export interface DynamicAutomationsPolicy {
  dynamic?: boolean;
  approval?: boolean;
}

export interface DynamicConnectionsPolicy {
  dynamic?: boolean;
  approval?: boolean;
  allowedHosts?: string[];
  /**
   * The host's grants a run-added connection may use: grant id -> the hosts
   * ("api.github.com", "*.example.com") its secret may be sent to, each also
   * allowed by `allowedHosts`. A run naming another grant is refused, and a
   * request to another host fails before the secret is attached.
   */
  grants?: Record<string, string[]>;
}

/** Fields every agent.ts may give; see RootAgentOptions and SubagentOptions. */
export interface AgentOptionsBase {
  /** Root agents only: stable agent id; defaults to the folder name. */
  id?: string;
  /** Root agents only: display name; defaults to the id. A subagent's name is its folder's (the build refuses it). */
  name?: string;
  /** What the agent does. Required for a subagent: its parent reads it to decide when to delegate. */
  description?: string;
  /** Model spec, `provider/model` (e.g. `openai/gpt-5.4-mini`); a subagent inherits its parent's when omitted. */
  model?: string;
  /** Trusted instructions every model prompt starts with (or instructions.md beside agent.ts). */
  instructions?: string;
  /** Tools visible up front (built-in names included); others stay behind discovery. */
  defaultTools?: string[];
  /** Context policy; `defaultContext()` when omitted. */
  context?: ContextPolicy;
  /** Host-independent tool policy that versions with the agent. */
  coreToolPolicy?: CoreToolPolicy;
  /**
   * Per-run and per-conversation limits; a host's `budgets` are ceilings over these.
   * On a subagent they bound each of its runs: a budget it leaves out is its parent's,
   * and one it sets may not be above its parent's (the build refuses it).
   */
  budgets?: RunBudgets;
  selfImprovement?: SelfImprovementPolicy;
  dynamicAutomations?: DynamicAutomationsPolicy;
  dynamicConnections?: DynamicConnectionsPolicy;
  /** Subagents only: parent tools this subagent may also use (it never inherits authored tools otherwise). */
  tools?: string[];
  /**
   * Subagents only: parent connections this subagent may use (the root's are its
   * `connections/<name>.ts` files). Its runs see these connections' tools and no
   * others: none when it names none.
   */
  connections?: string[];
  /** Subagents only: share the parent run's workspace (default) or get its own. */
  workspace?: "shared" | "isolated";
  /** Subagents only: JSON Schema the subagent's final output must match. */
  outputSchema?: JsonSchema;
  /**
   * Not allowed: the engine is chosen by the host (`agentHarness`, `modelHarnesses`),
   * never by the agent folder. The build rejects it.
   */
  harness?: never;
}

/** A root agent: the model is required. */
export interface RootAgentOptions extends AgentOptionsBase {
  model: string;
}

/** A subagent (`subagents/<name>/agent.ts`): the description is required, the model optional. */
export interface SubagentOptions extends AgentOptionsBase {
  description: string;
}

/** What `agent.ts` default-exports through `defineAgent`. */
export type AgentOptions = RootAgentOptions | SubagentOptions;

export type AgentDefinition = AgentOptions & Branded<"assembly-line.agent">;

export function defineAgent(options: AgentOptions): AgentDefinition {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("defineAgent(options): options must be an object (a root agent needs at least a model)");
  }
  return brand("assembly-line.agent", options);
}

export function isAgentDefinition(value: unknown): value is AgentDefinition {
  return hasBrand(value, "assembly-line.agent");
}
