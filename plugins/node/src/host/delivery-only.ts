import type { JsonValue } from "@assemblyline-agents/core";

/**
 * The `ChannelTurn.metadata` key whose value only the channel's `deliver()` sees: a secret the reply needs, such
 * as Discord's interaction token. The host stores it beside the run's channel metadata (`input.channel.deliveryOnly`)
 * instead of in it, and leaves it out of the run's input metadata: the default model context (which renders both),
 * resolvers and tools never see it. The outbox hands it back to `deliver()` under this key of
 * `ChannelDelivery.metadata`, which so holds what `normalizeHttp` returned. It is still in the stored run (as the
 * whole channel metadata always was), and the kernel passes `input.channel` whole as `ContextBuildInfo.channel`
 * to custom context policies and `hooks.context` taps. A stopgap until `ChannelTurn` and `ChannelDelivery` have a
 * typed delivery-only field (plugin-sdk) that the kernel keeps out of `ContextBuildInfo`.
 */
export const DELIVERY_ONLY_METADATA_KEY = "$deliveryOnly";

/** How the host stores a channel turn's channel data in the run input: `RunInput.channel` plus the delivery-only part. */
export interface StoredChannelInput {
  name: string;
  metadata?: Record<string, JsonValue>;
  /** `ChannelTurn.metadata[DELIVERY_ONLY_METADATA_KEY]`, for `deliver()` only. */
  deliveryOnly?: JsonValue;
}

/** A turn's metadata without its delivery-only part, and that part (plain JSON). */
export function splitDeliveryOnly(metadata: Record<string, JsonValue> | undefined): { shown: Record<string, JsonValue> | undefined; deliveryOnly: JsonValue | undefined } {
  if (!metadata || !Object.hasOwn(metadata, DELIVERY_ONLY_METADATA_KEY)) return { shown: metadata, deliveryOnly: undefined };
  const { [DELIVERY_ONLY_METADATA_KEY]: deliveryOnly, ...shown } = metadata;
  return { shown: Object.keys(shown).length > 0 ? shown : undefined, deliveryOnly: deliveryOnly === undefined ? undefined : (JSON.parse(JSON.stringify(deliveryOnly)) as JsonValue) };
}

/** What deliver() gets as `metadata`: the run's channel metadata with its turn's delivery-only part back under its key. */
export function deliveryMetadata(channel: StoredChannelInput | undefined): Record<string, JsonValue> | undefined {
  if (!channel || channel.deliveryOnly === undefined) return channel?.metadata;
  return { ...channel.metadata, [DELIVERY_ONLY_METADATA_KEY]: channel.deliveryOnly };
}
