import { brand, hasBrand, type Branded } from "./brand.js";
import type { RunBudgets } from "./budget.js";
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
}

/** What `agent.ts` default-exports through `defineAgent`. */
export interface AgentOptions {
  /** Stable agent id; defaults to the folder name. */
  id?: string;
  /** Display name; defaults to the id. */
  name?: string;
  description?: string;
  /** Model spec, `provider/model` (e.g. `openai/gpt-5.4-mini`). */
  model: string;
  /** Trusted instructions every model prompt starts with. */
  instructions?: string;
  /** Tools visible up front (built-in names included); others stay behind discovery. */
  defaultTools?: string[];
  /** Context policy; `defaultContext()` when omitted. */
  context?: ContextPolicy;
  /** Host-independent tool policy that versions with the agent. */
  coreToolPolicy?: CoreToolPolicy;
  /** Per-run and per-conversation limits; a host's `budgets` are ceilings over these. */
  budgets?: RunBudgets;
  selfImprovement?: SelfImprovementPolicy;
  dynamicAutomations?: DynamicAutomationsPolicy;
  dynamicConnections?: DynamicConnectionsPolicy;
  /**
   * Not allowed: the engine is chosen by the host (`agentHarness`, `modelHarnesses`),
   * never by the agent folder. The build rejects it.
   */
  harness?: never;
}

export type AgentDefinition = AgentOptions & Branded<"assembly-line.agent">;

export function defineAgent(options: AgentOptions): AgentDefinition {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("defineAgent(options): options must be an object with at least a model");
  }
  return brand("assembly-line.agent", options);
}

export function isAgentDefinition(value: unknown): value is AgentDefinition {
  return hasBrand(value, "assembly-line.agent");
}
