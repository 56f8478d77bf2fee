import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ChannelAck, ChannelDelivery, ChannelModule, ChannelRequest, ChannelTurn } from "../channel.js";
import type { JsonValue } from "../json.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

/** One provider event the kit asks the subject to send. */
export interface ChannelKitEvent {
  /** Unique per event; a redelivery of the event carries the same id. */
  id: string;
  /** Events with the same key belong to the same provider conversation (channel, thread, chat). */
  conversationKey: string;
  text: string;
  /** A file the event carries; the subject's provider serves its bytes. */
  attachment?: { id: string; filename: string; contentType: string; bytes: Uint8Array };
}

/**
 * A channel module plus a driver for its provider: the kit makes genuine and
 * forged provider requests through it and reads what the provider received.
 */
export interface ChannelKitSubject {
  module: ChannelModule;
  /** A genuine request carrying `event`, authenticated as the provider does it. Called again for a redelivery. */
  request(event: ChannelKitEvent): ChannelRequest | Promise<ChannelRequest>;
  /** Variants of a genuine request for `event` that must be refused (forged signature, stale, missing credentials, ...). At least one. */
  forgeries(event: ChannelKitEvent): Array<{ name: string; request: ChannelRequest }> | Promise<Array<{ name: string; request: ChannelRequest }>>;
  /** The provider's own handshake (e.g. a ping) that must be acknowledged without a turn, if it has one. */
  handshake?(): ChannelRequest | Promise<ChannelRequest>;
  /** The texts the provider received, in order, for replies to the event `eventId`. */
  received(eventId: string): string[] | Promise<string[]>;
  /** The longest message the provider accepts, when it has a limit. */
  messageLimit?: number;
  /** Make the provider refuse the next delivery attempt with a server error. */
  failNextDelivery?(): void;
}

/** Keys of the channel metadata the Node host takes from the turn's own fields, never from its `metadata`. */
const TURN_OWN_KEYS = ["eventId", "user", "attachments"];

/**
 * What the Node host passes to deliver() as metadata: the turn's channel metadata after a JSON round trip.
 * As the host builds it: the turn's `metadata` without `eventId`, `user` and `attachments` (provider data, such
 * as a Slack event's own `user`, must not stand in for them), then the turn's own event id, user and attachments.
 */
export function deliveryMetadataOf(turn: ChannelTurn): Record<string, JsonValue> {
  const passedThrough = Object.fromEntries(Object.entries(turn.metadata ?? {}).filter(([key]) => !TURN_OWN_KEYS.includes(key)));
  return JSON.parse(
    JSON.stringify({
      ...passedThrough,
      eventId: turn.eventId,
      ...(turn.user ? { user: turn.user } : {}),
      ...(turn.attachments && turn.attachments.length > 0 ? { attachments: turn.attachments } : {}),
    }),
  ) as Record<string, JsonValue>;
}

/** What the Node host passes to deliver() of a turn: its channel metadata, and its deliveryMetadata after a JSON round trip. */
export function deliveryOf(turn: ChannelTurn): Pick<ChannelDelivery, "metadata" | "deliveryMetadata"> {
  return {
    metadata: deliveryMetadataOf(turn),
    ...(turn.deliveryMetadata ? { deliveryMetadata: JSON.parse(JSON.stringify(turn.deliveryMetadata)) as Record<string, JsonValue> } : {}),
  };
}

/** A first delivery attempt, as a host's outbox makes it. */
const attempt = (reply: Pick<ChannelDelivery, "conversationId" | "runId" | "text" | "metadata" | "deliveryMetadata">): ChannelDelivery => ({
  deliveryId: `dlv_${randomUUID()}`,
  attempt: 1,
  signal: new AbortController().signal,
  ...reply,
});

const isAck = (value: ChannelTurn | ChannelAck): value is ChannelAck => (value as ChannelAck).ack === true;

/**
 * The ChannelModule contract: ingress verification (forged requests refused with
 * 401/403 before anything else), normalization into ChannelTurn, idempotent
 * receipt (a redelivered event keeps its eventId), delivery through the
 * provider (long replies within its limit, a refused delivery throws so the
 * outbox retries), and attachment resolution to a download that returns the bytes.
 */
export function describeChannelConformance(name: string, factory: StateKitFactory<ChannelKitSubject>): void {
  describe(`${name}: ChannelModule conformance`, () => {
    const subject = useSubject(factory);
    const event = (overrides: Partial<ChannelKitEvent> = {}): ChannelKitEvent => ({ id: `evt-${randomUUID()}`, conversationKey: `conv-${randomUUID().slice(0, 8)}`, text: "hello from the kit", ...overrides });
    const normalize = async (request: ChannelRequest): Promise<ChannelTurn | ChannelAck> => {
      expect(typeof subject().module.normalizeHttp, "a provider channel exports normalizeHttp").toBe("function");
      return subject().module.normalizeHttp!(request);
    };
    const turnOf = async (kitEvent: ChannelKitEvent): Promise<ChannelTurn> => {
      const result = await normalize(await subject().request(kitEvent));
      expect(isAck(result), "a message event becomes a turn, not an ack").toBe(false);
      return result as ChannelTurn;
    };

    it("refuses every forged, stale or unauthenticated request with 401 or 403", async () => {
      const forgeries = await subject().forgeries(event());
      expect(forgeries.length, "the subject names at least one forgery").toBeGreaterThan(0);
      for (const forgery of forgeries) {
        const outcome = await Promise.resolve()
          .then(() => normalize(forgery.request))
          .then(
            () => undefined,
            (error: unknown) => error as { status?: number; statusCode?: number },
          );
        expect(outcome, `${forgery.name} must be refused`).toBeDefined();
        expect([401, 403], `${forgery.name} is refused as unauthenticated`).toContain(outcome?.status ?? outcome?.statusCode);
      }
    });

    it("normalizes a genuine event into a turn with its text, a stable conversation and JSON metadata", async () => {
      const first = event();
      const turn = await turnOf(first);
      expect(turn.message).toBe(first.text);
      expect(turn.eventId).toMatch(/\S/);
      expect(turn.conversationId).toMatch(/\S/);
      expect(JSON.parse(JSON.stringify(turn.metadata ?? {}))).toEqual(turn.metadata ?? {});
      const sameConversation = await turnOf(event({ conversationKey: first.conversationKey, text: "second" }));
      expect(sameConversation.conversationId).toBe(turn.conversationId);
      const otherConversation = await turnOf(event({ text: "elsewhere" }));
      expect(otherConversation.conversationId).not.toBe(turn.conversationId);
    });

    it("keeps the eventId of a redelivered event and gives another event another id (idempotent receipt)", async () => {
      const original = event();
      const first = await turnOf(original);
      const redelivered = await turnOf(original);
      expect(redelivered.eventId).toBe(first.eventId);
      const other = await turnOf(event({ conversationKey: original.conversationKey, text: original.text }));
      expect(other.eventId).not.toBe(first.eventId);
    });

    it("acknowledges the provider's handshake without a turn", async (ctx) => {
      if (!subject().handshake) return ctx.skip();
      const result = await normalize(await subject().handshake!());
      expect(isAck(result)).toBe(true);
    });

    it("delivers a reply to the event it answers", async () => {
      expect(typeof subject().module.deliver, "a provider channel exports deliver").toBe("function");
      const turn = await turnOf(event());
      await subject().module.deliver!(attempt({ conversationId: turn.conversationId, runId: `run_${randomUUID()}`, text: "the agent's reply", ...deliveryOf(turn) }));
      expect((await subject().received(turn.eventId)).join("")).toBe("the agent's reply");
    });

    it("delivers a reply longer than the provider's limit in pieces within it, losing nothing", async (ctx) => {
      const limit = subject().messageLimit;
      if (!limit) return ctx.skip();
      const turn = await turnOf(event());
      const text = Array.from({ length: Math.ceil((limit * 2.5) / 12) }, (_, index) => `word${String(index).padStart(6, "0")} `).join("") + "\nend";
      await subject().module.deliver!(attempt({ conversationId: turn.conversationId, runId: `run_${randomUUID()}`, text, ...deliveryOf(turn) }));
      const pieces = await subject().received(turn.eventId);
      expect(pieces.length).toBeGreaterThan(2);
      for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(limit);
      expect(pieces.join("")).toBe(text);
    });

    it("throws when the provider refuses a delivery, so the outbox retries it", async (ctx) => {
      if (!subject().failNextDelivery) return ctx.skip();
      const turn = await turnOf(event());
      subject().failNextDelivery!();
      const delivery = attempt({ conversationId: turn.conversationId, runId: `run_${randomUUID()}`, text: "retried reply", ...deliveryOf(turn) });
      await expect(subject().module.deliver!(delivery)).rejects.toThrow();
      await subject().module.deliver!({ ...delivery, attempt: 2 });
      expect(await subject().received(turn.eventId)).toContain("retried reply");
    });

    it("resolves an attachment to a download that returns its bytes", async () => {
      const bytes = new TextEncoder().encode(`attachment ${randomUUID()}`);
      const withFile = event({ attachment: { id: `att-${randomUUID().slice(0, 8)}`, filename: "notes.txt", contentType: "text/plain", bytes } });
      const turn = await turnOf(withFile);
      expect(turn.attachments?.length, "the turn lists the attachment").toBe(1);
      const attachment = turn.attachments![0]!;
      const resolved = (await subject().module.resolveAttachment?.(attachment, { conversationId: turn.conversationId })) ?? { url: attachment.url!, headers: {} };
      const response = await fetch(resolved.url, { headers: resolved.headers ?? {} });
      expect(response.status).toBe(200);
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
    });
  });
}
