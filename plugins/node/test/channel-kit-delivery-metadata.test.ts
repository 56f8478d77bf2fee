import { describe, expect, it } from "vitest";
import { definePlugin, type ChannelDelivery, type ChannelModule, type ChannelTurn } from "@assemblyline-agents/core";
import { deliveryMetadataOf } from "@assemblyline-agents/core/testkit";
import { createKernel } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost, waitFor } from "./support/host.js";

/** The channel test kit's deliveryMetadataOf is what a channel's deliver() gets from the host, not a guess at it. */
describe("the channel kit's deliveryMetadataOf", () => {
  it("is the metadata the host hands deliver(): the turn's own eventId and user over same-named keys in its metadata", async () => {
    // Provider data passed through metadata often has its own `user` (a Slack event) or envelope id.
    const turn: ChannelTurn = {
      eventId: "evt-1",
      conversationId: "c1",
      message: "echo: hi",
      user: { id: "U-real", name: "Ada" },
      metadata: { eventId: "provider-envelope-id", user: "U-raw-string", attachments: "none", team: "T1" },
    };
    const delivered: ChannelDelivery[] = [];
    const hook: ChannelModule = {
      config: { transport: "http", route: "/kit-hook", methods: ["POST"] },
      normalizeHttp: () => turn,
      deliver: async (delivery) => void delivered.push(delivery),
    };
    const kernel = await createKernel({
      plugins: [definePlugin({ name: "kit-hook", version: "1.0.0", apply: (k) => k.hooks.channel.tap("kit-hook", (channels) => channels.set("/kit-hook", hook)) })],
    });
    const host = await startHost(await fixtureBundle(), { kernel });
    expect((await call(`${host.url}/kit-hook`, { body: {} })).status).toBe(202);
    const [delivery] = await waitFor(() => (delivered.length > 0 ? delivered : undefined), 10_000, "the reply's delivery");

    expect(deliveryMetadataOf(turn)).toEqual(delivery!.metadata);
    expect(deliveryMetadataOf(turn)).toEqual({ eventId: "evt-1", user: { id: "U-real", name: "Ada" }, team: "T1" });
  });
});
