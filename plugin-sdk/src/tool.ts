import { brand, hasBrand, type Branded } from "./brand.js";
import type { JsonSchema } from "./json.js";
import type { ToolExecutionContext } from "./tool-context.js";

export type SideEffect = "none" | "idempotent" | "external";

/** Every `SideEffect`, for checks of values that come from JavaScript (a `.js` tool file, a plugin). */
export const SIDE_EFFECTS: readonly SideEffect[] = ["none", "idempotent", "external"];

export function isSideEffect(value: unknown): value is SideEffect {
  return (SIDE_EFFECTS as readonly unknown[]).includes(value);
}
export type ToolVisibility = "auto" | "always" | "deferred" | "skill" | "hidden";
export type ToolExecution = "auto" | "direct" | "sandbox" | "both";

/** Discovery metadata of a tool (the spec's `capability` block). */
export interface ToolCapability {
  /**
   * Default `auto`: an authored tool is deferred (found by `tool_search`, run by
   * `tool_call`) unless agent.ts `defaultTools` lists it or `defaultEnabled` is
   * true; `always` offers it up front. `namespace`, `tags` and `aliases` only
   * help `tool_search` find it.
   */
  visibility?: ToolVisibility;
  execution?: ToolExecution;
  namespace?: string;
  tags?: string[];
  aliases?: string[];
}

/** An always-approve policy built by `approvalRequired`. */
export interface ApprovalPolicy extends Branded<"assembly-line.approval-policy"> {
  readonly reason: string;
  readonly sideEffect: SideEffect;
}

/**
 * Gate a tool behind a human approval. The run pauses in `waiting_approval`
 * before `execute`; `sideEffect` defaults to `"external"`.
 */
export function approvalRequired(reason: string, sideEffect: SideEffect = "external"): ApprovalPolicy {
  if (typeof reason !== "string" || reason.trim() === "") {
    throw new TypeError("approvalRequired(reason): reason must be a non-empty string that tells the approver why");
  }
  if (!isSideEffect(sideEffect)) {
    throw new TypeError(`approvalRequired(reason, sideEffect): sideEffect is ${JSON.stringify(sideEffect)}; it must be "none", "idempotent" or "external" (or left out: "external")`);
  }
  return brand("assembly-line.approval-policy", { reason, sideEffect });
}

export function isApprovalPolicy(value: unknown): value is ApprovalPolicy {
  return hasBrand(value, "assembly-line.approval-policy");
}

/** Everything `defineTool` accepts: the spec's Full Options table. */
export interface ToolOptions<Input = unknown, Output = unknown> {
  /** Model-facing purpose statement; drives tool selection. */
  description: string;
  /** Argument contract, checked before `execute`. */
  inputSchema: JsonSchema;
  /** Declared result contract, checked after `execute` (an error-shaped result, `{ error }`, is not held to it). */
  outputSchema?: JsonSchema;
  /** Tool body; runs in the trusted app runtime. Must return JSON-serializable data. */
  execute(input: Input, ctx: ToolExecutionContext): Output | Promise<Output>;
  /**
   * Bounded projection shown to the model; the full result is persisted. Synchronous: an async one is
   * refused at build. Not called for an error-shaped result (`{ error }`), which the model sees as it is.
   */
  toModelOutput?(output: Output): unknown;
  /** Approval gate; `approvalRequired(...)` builds a policy with a reason. Default `false`. */
  needsApproval?: boolean | ApprovalPolicy;
  /** Force the tool visible up front instead of behind deferred discovery. */
  defaultEnabled?: boolean;
  /** Side-effect class recorded for approval and audit surfaces. */
  sideEffect?: SideEffect;
  /** Discovery metadata. */
  capability?: ToolCapability;
}

export type ToolDefinition<Input = unknown, Output = unknown> = ToolOptions<Input, Output> &
  Branded<"assembly-line.tool">;

/** Define one model-facing tool. The file name stem (`tools/record_note.ts`) is its name. */
export function defineTool<Input = unknown, Output = unknown>(options: ToolOptions<Input, Output>): ToolDefinition<Input, Output> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("defineTool(options): options must be an object with description, inputSchema and execute");
  }
  return brand("assembly-line.tool", options);
}

export function isToolDefinition(value: unknown): value is ToolDefinition {
  return hasBrand(value, "assembly-line.tool");
}

/** The sentinel `disableTool()` returns: the file name selects which built-in to remove. */
export type DisabledTool = Branded<"assembly-line.disabled-tool">;

/** Remove a built-in tool: `tools/bash.ts` exporting `disableTool()` removes `bash`. */
export function disableTool(): DisabledTool {
  return brand("assembly-line.disabled-tool", {});
}

export function isDisabledTool(value: unknown): value is DisabledTool {
  return hasBrand(value, "assembly-line.disabled-tool");
}

/** The names of the built-in harness tools, each a replaceable slot. */
export const BUILT_IN_TOOL_NAMES = [
  "read",
  "write",
  "edit",
  "delete",
  "list",
  "grep",
  "bash",
  "ask_question",
  "spawn_subagent",
  "load_skill",
  "tool_search",
  "tool_describe",
  "tool_call",
] as const;

export type BuiltInToolName = (typeof BUILT_IN_TOOL_NAMES)[number];

/** The bridge tools the runtime handles itself; overriding one replaces it wholesale. */
export const BRIDGE_TOOL_NAMES = ["tool_search", "tool_describe", "tool_call"] as const;

/**
 * An agent's tool table as a plugin sees it in the kernel's `tools` hook: it can
 * add tools from outside the agent folder (connections, plugins). A provided
 * tool's `auto` visibility is `deferred`, so `tool_search` finds it without
 * growing every prompt. Name connection tools `<connection>__<tool>`.
 */
export interface ToolTableSurface {
  has(name: string): boolean;
  names(): string[];
  /** Add one tool; throws AL_ERR_TOOL_PROVIDED when the name is taken or malformed. */
  provide(name: string, definition: ToolDefinition<any, any>, options: { provider: string }): void;
}

/** What the `tools` hook knows about the runtime it builds the table for. */
export interface ToolTableInfo {
  /** Whether a sandbox adapter backs /workspace and `bash`. */
  sandboxAvailable: boolean;
}

/** Per-tool host policy (`RuntimeOptions.coreToolPolicy`). */
export type CoreToolMode = "enabled" | "approval" | "disabled";
export type CoreToolPolicy = Partial<Record<string, CoreToolMode>>;
