import { beforeAll, describe, expect, it } from "vitest";
import { definePlugin, type ChannelModule } from "@assemblyline-agents/core";
import { createKernel, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

const channel = (message: string): ChannelModule => ({
  config: { transport: "http", route: "/inbox", methods: ["POST"] },
  normalizeHttp: (request) => ({ eventId: String((request.body as { id: string }).id), conversationId: "p", message }),
});

describe("two plugins registering one channel route through hooks.channel", () => {
  it("refuses to start, naming the route, instead of the later plugin silently taking the earlier one's channel", async () => {
    const kernel = await createKernel({
      plugins: [
        definePlugin({ name: "inbox-a", version: "1.0.0", apply: (k) => k.hooks.channel.tap("inbox-a", (channels) => channels.set("/inbox", channel("echo: from a"))) }),
        definePlugin({ name: "inbox-b", version: "1.0.0", apply: (k) => k.hooks.channel.tap("inbox-b", (channels) => channels.set("/inbox", channel("echo: from b"))) }),
      ],
    });
    const outcome = await startHost(bundle, { kernel }).then(
      async (host) => {
        const reply = await call(`${host.url}/inbox?wait=10`, { body: { id: "e1" } });
        await host.shutdown?.();
        return `started; /inbox served: ${JSON.stringify(reply.body).slice(0, 120)}`;
      },
      (error: { code?: string; message: string }) => `${error.code}: ${error.message}`,
    );
    expect(outcome).toMatch(/^AL_ERR_HOOK_TAP: .*the route \/inbox, which tap "inbox-a" of plugin inbox-a@1.0.0 already registered/);
    expect(outcome).toContain('tap "inbox-b" of plugin inbox-b@1.0.0');
  });
});
