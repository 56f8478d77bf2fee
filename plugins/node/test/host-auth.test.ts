import { cpSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { listenNodeRuntime, noopLogger } from "../src/index.js";
import { FIXTURE_AGENT, fixtureBundle, startHost, tempDir, type Reply } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** Sent with the request target exactly as written: fetch would normalize some spellings first. */
function send(url: string, path: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, path, headers: { "content-type": "application/json", ...headers } }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), body: text === "" ? undefined : JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe("the path an auth policy judges", () => {
  it("is the path the request is routed to, however its slashes are spelt", async () => {
    const seen: string[] = [];
    const host = await startHost(bundle, {
      devMode: false,
      auth: {
        bearerToken: "operator-token",
        // Reads /runs for anyone; the kill switch only with the token.
        authorize: (request) => {
          seen.push(request.path);
          return request.path !== "/admin/kill-switch";
        },
      },
    });
    const flip = { engaged: true, actor: "nobody", reason: "not allowed" };
    for (const spelling of ["/admin/kill-switch", "//admin/kill-switch", "/admin//kill-switch/", "///admin/kill-switch//"]) {
      const reply = await send(host.url, spelling, "POST", flip);
      expect(reply.status, `POST ${spelling}`).toBe(401);
      expect(reply.body.error.code).toBe("AL_ERR_HTTP_UNAUTHORIZED");
    }
    expect(seen).toEqual(["/admin/kill-switch", "/admin/kill-switch", "/admin/kill-switch", "/admin/kill-switch"]);
    expect(await host.runtime.state.settings.getSetting("ingress.killSwitch:host-agent")).toBeUndefined();
    // The same spellings reach the route the policy judged, for a caller it admits.
    expect((await send(host.url, "//runs/", "GET")).status).toBe(200);
    expect(seen.at(-1)).toBe("/runs");
    expect((await send(host.url, "//admin/kill-switch/", "GET", undefined, { authorization: "Bearer operator-token" })).status).toBe(200);
    // Logs name the path as routed, too.
    expect(host.logger.events("security.unauthorized").map((entry) => entry.fields.path)).toContain("/admin/kill-switch");
    expect(host.logger.events("security.unauthorized").map((entry) => entry.fields.path)).not.toContain("//admin/kill-switch");
  });
});

describe("channel routes", () => {
  it("refuses a route that is one of the host's own once its slashes are read as routing reads them", async () => {
    const agentDir = join(tempDir(), "agent");
    cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
    writeFileSync(join(agentDir, "channels/sneaky.ts"), 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "//admin/panel" });\n');
    const clashing = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
    const refused = await listenNodeRuntime({ ...clashing, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {} }).then(
      // Stopped at once should it start: the test owns what it starts.
      (handle) => handle.shutdown({ timeoutMs: 2_000 }).then(() => "started"),
      (error: unknown) => error,
    );
    expect(isAssemblyLineError(refused, "AL_ERR_CHANNEL_DEFINITION"), String(refused)).toBe(true);
    expect((refused as Error).message).toContain("route //admin/panel (routed as /admin/panel), which the host serves itself");
  });
});

describe("auth options", () => {
  /** The error listenNodeRuntime fails with for `auth`, or "started" (then stopped at once) when it starts. */
  async function refusal(auth: unknown, env: Record<string, string> = {}): Promise<unknown> {
    return listenNodeRuntime({ ...bundle, auth: auth as never, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: { FIXTURE_SECRET: "s3cret", ...env } }).then(
      (handle) => handle.shutdown({ timeoutMs: 2_000 }).then(() => "started"),
      (error: unknown) => error,
    );
  }

  function expectConfigError(error: unknown, ...fragments: string[]): void {
    expect(isAssemblyLineError(error, "AL_ERR_HOST_CONFIG"), String(error)).toBe(true);
    for (const fragment of fragments) expect((error as Error).message).toContain(fragment);
  }

  it("refuses an empty bearerToken, which would otherwise override ASSEMBLY_LINE_BEARER_TOKEN and leave a dev host open", async () => {
    expectConfigError(await refusal({ bearerToken: "" }, { ASSEMBLY_LINE_BEARER_TOKEN: "env-token" }), "auth.bearerToken is empty", "ASSEMBLY_LINE_BEARER_TOKEN");
    expectConfigError(await refusal({ bearerToken: "   " }), "auth.bearerToken is empty");
    expectConfigError(await refusal({ bearerToken: [] }), "auth.bearerToken is an empty list");
    expectConfigError(await refusal({ bearerToken: ["current", ""] }), "auth.bearerToken[1] is empty");
  });

  it("refuses a token that is not a string, naming where it is and never what it holds", async () => {
    const error = await refusal({ bearerToken: ["tok-secret", 42] });
    expectConfigError(error, "auth.bearerToken[1] is number 42, not a string");
    expect((error as Error).message).not.toContain("tok-secret");
    expectConfigError(await refusal({ bearerToken: { value: "x" } }), "auth.bearerToken is an object, not a string");
  });

  it('refuses publicProbes "false", a string that would keep the probes public', async () => {
    expectConfigError(await refusal({ bearerToken: "tok", publicProbes: "false" }), 'auth.publicProbes is the string "false", not true or false', "publicProbes: false");
  });

  it("refuses an authorize that is not a function, an unknown auth option and auth that is not an object", async () => {
    expectConfigError(await refusal({ authorize: true }), "auth.authorize is boolean true, not a function");
    expectConfigError(await refusal({ token: "tok" }), "auth.token is not an auth option", "bearerToken, authorize, publicProbes");
    const error = await refusal("tok-secret");
    expectConfigError(error, "auth is a string, not an object");
    expect((error as Error).message).not.toContain("tok-secret");
  });

  it("still takes well-shaped options, and leaves an empty env token unset", async () => {
    expect(await refusal({ bearerToken: ["old", "new"], publicProbes: false, authorize: () => false })).toBe("started");
    expect(await refusal(undefined, { ASSEMBLY_LINE_BEARER_TOKEN: "" })).toBe("started");
  });
});
