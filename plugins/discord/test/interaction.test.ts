import { describe, expect, it } from "vitest";
import { isAssemblyLineError, type ChannelTurn } from "@assemblyline-agents/core";
import { defineDiscordChannel, normalizeInteraction } from "../src/index.js";

const base = { id: "1300000000000000001", application_id: "1000000000000000001", token: "tok", channel_id: "42", member: { user: { id: "7", username: "nelly", global_name: "Nelly" } } };

describe("normalizing interactions", () => {
  it("reads a message component's custom id and selected values", () => {
    const turn = normalizeInteraction({ ...base, type: 3, data: { custom_id: "pick_colour", component_type: 3, values: ["red", "blue"] } });
    expect(turn).toMatchObject({ eventId: base.id, conversationId: "discord:42", message: "pick_colour: red, blue", user: { id: "7", name: "Nelly" }, respond: { status: 200, body: { type: 5 } } });
  });

  it("reads a modal's text inputs, a message command's target and a command line with several options", () => {
    expect(normalizeInteraction({ ...base, type: 5, data: { custom_id: "feedback", components: [{ components: [{ custom_id: "a", value: "first" }] }, { components: [{ custom_id: "b", value: "second" }] }] } })).toMatchObject({ message: "first\nsecond" });
    expect(
      normalizeInteraction({ ...base, type: 2, data: { name: "Summarize", type: 3, target_id: "9", resolved: { messages: { "9": { content: "the long thread", attachments: [] } } } } }),
    ).toMatchObject({ message: "the long thread" });
    expect(
      normalizeInteraction({ ...base, type: 2, data: { name: "remind", type: 1, options: [{ name: "at", type: 1, options: [{ name: "when", type: 3, value: "9am" }, { name: "repeat", type: 5, value: true }] }] } }),
    ).toMatchObject({ message: "/remind at when: 9am repeat: true" });
  });

  // Discord builds modals with Labels (type 18) now: each wraps one field, which comes back as `component`, not in an action row's `components`.
  it("reads a modal's fields in Labels as in action rows: a text input's text, a select's custom id and values, one per line", () => {
    const turn = normalizeInteraction({
      ...base,
      type: 5,
      data: {
        custom_id: "feedback",
        components: [
          { type: 18, id: 1, component: { type: 4, id: 2, custom_id: "what", value: "the export button does nothing" } },
          { type: 18, id: 3, component: { type: 3, id: 4, custom_id: "severity", values: ["high"] } },
          { type: 1, id: 5, components: [{ type: 4, id: 6, custom_id: "steps", value: "click export" }] },
        ],
      },
    });
    expect(turn).toMatchObject({ message: "the export button does nothing\nseverity: high\nclick export" });
    expect(turn).not.toHaveProperty("attachments");
  });

  it("passes the files uploaded through a modal's file upload on as the turn's attachments, as a command's attachment option", () => {
    const shot = { id: "111", filename: "shot.png", url: "https://cdn.discordapp.com/attachments/1/111/shot.png", content_type: "image/png", size: 10 };
    const turn = normalizeInteraction({
      ...base,
      type: 5,
      data: {
        custom_id: "report",
        components: [
          { type: 18, id: 1, component: { type: 4, id: 2, custom_id: "what", value: "see the screenshot" } },
          { type: 18, id: 3, component: { type: 19, id: 4, custom_id: "screenshot", values: ["111", "999"] } },
        ],
        resolved: { attachments: { "111": shot } },
      },
    });
    // "999" is not in the resolved attachments: nothing to download for it.
    expect(turn).toMatchObject({
      message: "see the screenshot",
      attachments: [{ id: "111", url: shot.url, filename: "shot.png", contentType: "image/png", size: 10 }],
    });
  });

  it("keeps what delivery needs in the turn's metadata, the token only in its deliveryMetadata, never in the message", () => {
    const turn = normalizeInteraction({ ...base, type: 2, data: { name: "ask", type: 1, options: [{ name: "prompt", type: 3, value: "hi" }] } });
    expect(turn).toMatchObject({ message: "hi", metadata: { discord: { applicationId: base.application_id, interactionId: base.id, channelId: "42" } }, deliveryMetadata: { discord: { interactionToken: "tok" } } });
    expect((turn as ChannelTurn).metadata?.discord).not.toHaveProperty("interactionToken");
  });

  it("answers autocomplete with no choices and refuses what it does not handle with 400", () => {
    expect(normalizeInteraction({ ...base, type: 4, data: { name: "ask" } })).toEqual({ ack: true, status: 200, body: { type: 8, data: { choices: [] } } });
    for (const body of [{ ...base, type: 9 }, { type: "2" }, null, { ...base, type: 2, token: "", data: { name: "ask" } }]) {
      let refusal: unknown;
      try {
        normalizeInteraction(body);
      } catch (error) {
        refusal = error;
      }
      expect(isAssemblyLineError(refusal, "AL_ERR_DISCORD_INTERACTION"), JSON.stringify(body)).toBe(true);
      expect((refusal as { status: number }).status).toBe(400);
    }
  });
});

describe("defineDiscordChannel options", () => {
  it("declares its public key as the required ingress secret", () => {
    expect(defineDiscordChannel().ingress).toEqual({ requiredSecretEnv: [["DISCORD_PUBLIC_KEY"]] });
    expect(defineDiscordChannel({ publicKeyEnv: "MY_DISCORD_KEY", route: "/d" })).toMatchObject({ route: "/d", ingress: { requiredSecretEnv: [["MY_DISCORD_KEY"]] } });
  });

  it.each([[{ route: "discord" }], [{ messageLimit: 5000 }], [{ maxTimestampSkewSeconds: 0 }], [{ publicKey: "abc" }], [{ apiBaseUrl: "ftp://x" }]])("refuses %j with AL_ERR_DISCORD_CONFIG", (options) => {
    expect(() => defineDiscordChannel(options as never)).toThrow(/AL_ERR_DISCORD_CONFIG/);
  });

  it("accepts through the package's config.schema.json every option defineDiscordChannel takes (a host checks plugin options against it)", async () => {
    const { optionsSchemaCheck } = await import("@assemblyline-agents/core");
    const check = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), { helper: "defineDiscordChannel", code: "AL_ERR_DISCORD_CONFIG", fix: () => "" });
    const options = { route: "/d", publicKeyEnv: "MY_KEY", apiBaseUrl: "http://127.0.0.1:1/api", attachmentHosts: ["cdn.discordapp.com"], maxTimestampSkewSeconds: 60, messageLimit: 1000, env: { MY_KEY: "ab" } };
    expect(() => defineDiscordChannel(options)).not.toThrow();
    expect(() => check(options)).not.toThrow();
    expect(() => check({ publicKey: "abc" })).toThrow(/AL_ERR_DISCORD_CONFIG/);
  });

  // The list is checked against an attachment's URL by exact name, and goes to the host as the download's allowedHosts, where
  // "*." matches subdomains: a pattern accepted here would refuse every attachment at the first hop, saying to list the host.
  it("refuses an attachmentHosts entry that is not a host name, a '*.' pattern included, here and through config.schema.json", async () => {
    const { optionsSchemaCheck } = await import("@assemblyline-agents/core");
    const check = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), { helper: "defineDiscordChannel", code: "AL_ERR_DISCORD_CONFIG", fix: () => "" });
    for (const host of ["*.discordapp.com", "https://cdn.discordapp.com", "cdn.discordapp.com:443", "cdn.discordapp.com/attachments"]) {
      expect(() => defineDiscordChannel({ env: {}, attachmentHosts: ["media.discordapp.net", host] }), host).toThrow(`attachmentHosts holds ${JSON.stringify(host)}, not a host name`);
      expect(() => check({ attachmentHosts: [host] }), host).toThrow(/AL_ERR_DISCORD_CONFIG/);
    }
    for (const hosts of [["cdn.discordapp.com", "media.discordapp.net"], ["127.0.0.1"], ["[::1]"]]) {
      const channel = defineDiscordChannel({ env: {}, attachmentHosts: hosts });
      expect(() => check({ attachmentHosts: hosts })).not.toThrow();
      const url = `https://${hosts[0]}/attachments/1/2/a.png`;
      expect(channel.resolveAttachment({ id: "1", url, filename: "a.png" }, { conversationId: "discord:1" })).toMatchObject({ url, allowedHosts: hosts });
    }
  });

  it("fails closed with a configuration error, not a refusal, while the public key is missing or malformed", () => {
    for (const env of [{}, { DISCORD_PUBLIC_KEY: "not-hex" }]) {
      const channel = defineDiscordChannel({ env });
      let failure: unknown;
      try {
        channel.normalizeHttp({ method: "POST", path: "/discord/interactions", headers: {}, body: { type: 1 }, rawBody: new Uint8Array() });
      } catch (error) {
        failure = error;
      }
      expect(String(failure)).toMatch(/AL_ERR_DISCORD_CONFIG.*DISCORD_PUBLIC_KEY/);
      // No 4xx status: the host treats it as its own failure (a 500 that shows nothing of it), not the caller's.
      expect((failure as { status?: number }).status).toBeUndefined();
    }
  });
});

describe("discordPlugin", () => {
  it("registers the channel at its route through hooks.channel", async () => {
    const { kernelHost } = await import("@assemblyline-agents/runtime");
    const { discordPlugin } = await import("../src/index.js");
    const kernel = await kernelHost.createKernel({ plugins: [discordPlugin({ route: "/d", env: {} })] });
    const channels = (kernel.hooks.channel as unknown as { call(map: Map<string, unknown>): Map<string, { config: { route: string; ingress?: unknown }; normalizeHttp?: unknown; deliver?: unknown }> }).call(new Map());
    const module = channels.get("/d");
    expect(module?.config).toMatchObject({ route: "/d", ingress: { requiredSecretEnv: [["DISCORD_PUBLIC_KEY"]] } });
    expect(typeof module?.normalizeHttp).toBe("function");
    expect(typeof module?.deliver).toBe("function");
  });
});
