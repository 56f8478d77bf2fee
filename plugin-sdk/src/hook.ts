import { brand, hasBrand, type Branded } from "./brand.js";
import type { RunEvent } from "./events.js";

export interface HookContext {
  runId: string;
  agentRevision: string;
  agent: { id: string; name: string };
}

export type HookHandler = (event: RunEvent, ctx: HookContext) => void | Promise<void>;

export interface HookOptions {
  /** Handlers keyed by event type; `*` matches every event. */
  events: Record<string, HookHandler>;
}

export type HookDefinition = HookOptions & Branded<"assembly-line.hook">;

/**
 * Observe the durable run event stream. Handlers fire after an event is recorded;
 * a throwing handler is logged as `hook.failed` and the run continues.
 */
export function defineHook(options: HookOptions): HookDefinition {
  if (typeof options !== "object" || options === null || typeof options.events !== "object" || options.events === null) {
    throw new TypeError("defineHook({ events }): events must map event types (or \"*\") to handler functions");
  }
  return brand("assembly-line.hook", options);
}

export function isHookDefinition(value: unknown): value is HookDefinition {
  return hasBrand(value, "assembly-line.hook");
}
