import type { JsonValue, RunEvent, RunRecord } from "@assemblyline-agents/core";

/**
 * A run and its events as the host's HTTP API shows them: without the turn's channel delivery data
 * (`input.channel.delivery`, a channel's `deliveryMetadata`: a Discord interaction token, a webhook
 * URL), which is for the channel's `deliver()` only and lets whoever holds it post as the bot.
 * The outbox reads it from the store itself. `run.created` carries the same input.
 */
export function runWithoutDelivery(run: RunRecord): RunRecord;
export function runWithoutDelivery(run: RunRecord | undefined): RunRecord | undefined;
export function runWithoutDelivery(run: RunRecord | undefined): RunRecord | undefined {
  if (run?.input.channel?.delivery === undefined) return run;
  const { delivery: _withheld, ...channel } = run.input.channel;
  return { ...run, input: { ...run.input, channel } };
}

/** `event` without the channel delivery data of the input it carries (run.created's; see runWithoutDelivery). */
export function eventWithoutDelivery(event: RunEvent): RunEvent {
  const input = event.data.input;
  if (event.type !== "run.created" || !isObject(input) || !isObject(input.channel) || !Object.hasOwn(input.channel, "delivery")) return event;
  const { delivery: _withheld, ...channel } = input.channel;
  return { ...event, data: { ...event.data, input: { ...input, channel } } };
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
