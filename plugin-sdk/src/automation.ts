import { brand, hasBrand, type Branded } from "./brand.js";

/**
 * When an automation runs:
 * - a cron expression (5 fields, or 6 with seconds first), in UTC: `"0 9 * * 1-5"`;
 * - `{ cron, timezone }`: the same, read in an IANA time zone (`"Europe/Paris"`);
 * - `{ every }`: every that many milliseconds (1 000 to 366 days), at the multiples of the interval
 *   since the Unix epoch (1970-01-01T00:00:00Z), not from when the automation was made: `{ every:
 *   86_400_000 }` runs at 00:00 UTC each day, `{ every: 3_600_000 }` on the hour. For a set local
 *   time, use `{ cron, timezone }`;
 * - `{ at }`: once, at an ISO-8601 time.
 */
export type AutomationSchedule = string | { cron: string; timezone?: string } | { every: number } | { at: string };

/** The normalized form every store and listing carries. */
export type NormalizedSchedule =
  | { kind: "cron"; expression: string; timezone: string }
  | { kind: "every"; everyMs: number }
  | { kind: "at"; at: string };

/** What `automations/<name>.ts` default-exports through `defineAutomation`. */
export interface AutomationOptions {
  schedule: AutomationSchedule;
  /** The message each run starts with. */
  message: string;
  /** Runs join this conversation (its history reaches the model); each run stands alone when omitted. */
  conversationId?: string;
  /** Default true; false keeps the automation defined but never due. */
  enabled?: boolean;
}

export type AutomationDefinition = AutomationOptions & Branded<"assembly-line.automation">;

/** A static routine: the file name stem (`automations/daily_report.ts`) is its name. */
export function defineAutomation(options: AutomationOptions): AutomationDefinition {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("defineAutomation(options): options must be an object with schedule and message");
  }
  return brand("assembly-line.automation", options);
}

export function isAutomationDefinition(value: unknown): value is AutomationDefinition {
  return hasBrand(value, "assembly-line.automation");
}

/** An automation as listings show it. */
export interface AutomationInfo {
  name: string;
  /** static: from automations/ (read-only at run time); dynamic: created through ctx.automationManager. */
  source: "static" | "dynamic";
  schedule: NormalizedSchedule;
  message: string;
  conversationId: string | null;
  /** As defined (enabled: false in the definition). */
  enabled: boolean;
  /** Paused by an operator (`assembly-line automations pause`). */
  paused: boolean;
  /**
   * The next due time; null when it will not run again (a one-shot that ran, disabled or paused).
   * A `held` automation shows the time its schedule gives, which passes without a run while it is held.
   */
  nextRunAt: string | null;
  /**
   * true for a run-created (dynamic) automation while the agent.ts of the build answering turns
   * dynamicAutomations.dynamic off: it is kept, but its due times pass without a run until dynamic is
   * on again (docs/automations.md). Always false for a static one, and in the answers of
   * `ctx.automationManager`, which exists only while dynamic is on.
   */
  held: boolean;
}

export interface CreateAutomationInput {
  /** snake_case or kebab-case, unique among the agent's automations. */
  name: string;
  schedule: AutomationSchedule;
  message: string;
  conversationId?: string;
  enabled?: boolean;
}

/** What `update` changes; a field left out keeps its value. `conversationId: null` makes the runs join no conversation. */
export type UpdateAutomationInput = Partial<Omit<CreateAutomationInput, "name" | "conversationId">> & { conversationId?: string | null };

/**
 * `ctx.automationManager`: present only when agent.ts sets
 * `dynamicAutomations: { dynamic: true }`. With `approval: true` each change
 * pauses the run for approval before it is applied; the tool call runs again
 * once approved. Static automations (automations/) are read-only here.
 */
export interface AutomationManager {
  create(input: CreateAutomationInput): Promise<AutomationInfo>;
  list(): Promise<AutomationInfo[]>;
  update(name: string, patch: UpdateAutomationInput): Promise<AutomationInfo>;
  delete(name: string): Promise<{ deleted: boolean }>;
}
