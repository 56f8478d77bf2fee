import type { JsonValue, RunEvent } from "@assemblyline-agents/core";

const MAX_VALUE = 100;

/** One readable line per event: seq, type, the fields that matter for that type. */
export function formatEvent(event: RunEvent): string {
  const data = event.data;
  const summary = (() => {
    switch (event.type) {
      case "run.created":
      case "run.started":
        return compact({ model: data.modelSpec });
      case "tool.called":
        return `${String(data.toolName)} ${short(data.input)}`;
      case "tool.completed":
        return `${String(data.toolName)} -> ${short(data.modelOutput)}`;
      case "tool.execution_failed":
      case "tool.input_invalid":
      case "tool.disabled":
        return `${String(data.toolName)}: ${String(data.error)}`;
      case "approval.requested":
        return `${String(data.toolName)} (${String(data.reason)}) call ${String(data.callId)}`;
      case "input.requested":
        return `${String(data.question)}`;
      case "model.response":
        return data.text ? short(data.text) : `tool calls: ${short(data.toolCalls)}`;
      case "run.completed":
        return short(data.text);
      case "run.failed":
        return String(data.error);
      default:
        return short(data);
    }
  })();
  return `${String(event.seq).padStart(4)}  ${event.type.padEnd(26)} ${summary}`.trimEnd();
}

function compact(fields: Record<string, JsonValue | undefined>): string {
  return Object.entries(fields)
    .filter(([, value]) => value !== undefined && value !== null)
    .map(([key, value]) => `${key}=${String(value)}`)
    .join(" ");
}

function short(value: JsonValue | undefined): string {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? null);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}
