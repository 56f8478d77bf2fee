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
