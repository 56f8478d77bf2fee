import { describe, expect, it } from "vitest";
import { definePlugin, isAssemblyLineError, type ChannelModule } from "@assemblyline-agents/core";
import { createKernel } from "@assemblyline-agents/runtime";

const channel = (route: string): ChannelModule => ({ config: { transport: "http", route, methods: ["POST"] } });

/** A plugin whose channel tap registers `module` at its route. */
const routePlugin = (name: string, module: ChannelModule) =>
  definePlugin({ name, version: "1.0.0", apply: (kernel) => kernel.hooks.channel.tap(name, (channels) => channels.set(module.config.route, module)) });

async function refusal(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("hooks.channel: one channel module per route", () => {
  it("refuses a plugin that registers a route another plugin already registered, naming the route and both plugins", async () => {
    const kernel = await createKernel({ plugins: [routePlugin("inbox-a", channel("/inbox")), routePlugin("inbox-b", channel("/inbox"))] });
    const error = await refusal(() => kernel.hooks.channel.call(new Map()));
    expect(isAssemblyLineError(error, "AL_ERR_HOOK_TAP"), String(error)).toBe(true);
    expect((error as Error).message).toContain('hooks.channel tap "inbox-b" of plugin inbox-b@1.0.0 puts its channel at the route /inbox, which tap "inbox-a" of plugin inbox-a@1.0.0 already registered');
    expect(error).toMatchObject({ details: { route: "/inbox", claimants: ['tap "inbox-a" of plugin inbox-a@1.0.0', 'tap "inbox-b" of plugin inbox-b@1.0.0'] }, fix: expect.stringContaining("another route") });
  });

  it("refuses a plugin that takes the route of a channel the host passed in (an agent's channels/ file)", async () => {
    const kernel = await createKernel({ plugins: [routePlugin("squatter", channel("/message"))] });
    const error = await refusal(() => kernel.hooks.channel.call(new Map([["/message", channel("/message")]])));
    expect(isAssemblyLineError(error, "AL_ERR_HOOK_TAP"), String(error)).toBe(true);
    expect((error as Error).message).toContain('tap "squatter" of plugin squatter@1.0.0 puts its channel at the route /message, which the channels the host passed to hooks.channel');
  });

  it("names the earlier tap also when it returned a new map instead of setting the one it got", async () => {
    const copying = definePlugin({ name: "copying", version: "1.0.0", apply: (kernel) => kernel.hooks.channel.tap("copying", (channels) => new Map(channels).set("/inbox", channel("/inbox"))) });
    const kernel = await createKernel({ plugins: [copying, routePlugin("inbox-b", channel("/inbox"))] });
    const error = await refusal(() => kernel.hooks.channel.call(new Map()));
    expect((error as Error).message).toContain('tap "inbox-b" of plugin inbox-b@1.0.0 puts its channel at the route /inbox, which tap "copying" of plugin copying@1.0.0 already registered');
  });

  it("serves every plugin's channel when their routes differ, and lets a tap keep a route's module as it is", async () => {
    const shared = channel("/team/inbox");
    const keeper = definePlugin({ name: "keeper", version: "1.0.0", apply: (kernel) => kernel.hooks.channel.tap("keeper", (channels) => channels.set("/team/inbox", channels.get("/team/inbox") ?? shared)) });
    const kernel = await createKernel({ plugins: [routePlugin("team", shared), keeper, routePlugin("alerts", channel("/alerts"))] });
    const channels = kernel.hooks.channel.call(new Map([["/message", channel("/message")]]));
    expect([...channels.keys()]).toEqual(["/message", "/team/inbox", "/alerts"]);
    expect(channels.get("/team/inbox")).toBe(shared);
  });
});
