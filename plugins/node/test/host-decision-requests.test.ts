import { request } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("decision requests (approve, deny, answer)", () => {
  it("leave nothing behind on the host: many of them add no lasting listener to its shutdown signal", async () => {
    const host = await startHost(bundle);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      const done = await call(`${host.url}/message?wait=10`, { body: { message: "echo: done" } });
      expect(done.body.status).toBe("completed");
      // Refused (the run is finished), as a polling client's retries would be; each one used to keep a listener for good.
      for (let index = 0; index < 25; index += 1) expect((await call(`${host.url}/runs/${done.body.runId}/deny?wait=0`, { body: {} })).status).toBe(409);
      await new Promise((settle) => setImmediate(settle));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("check ?wait= as a message does: a bad value is a 400", async () => {
    const host = await startHost(bundle);
    const done = await call(`${host.url}/message?wait=10`, { body: { message: "echo: done" } });
    const bad = await call(`${host.url}/runs/${done.body.runId}/approve?wait=soon`, { body: {} });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "AL_ERR_HTTP_BODY_INVALID", message: expect.stringContaining("?wait=soon is not a number of seconds") });
  });
});

describe("HEAD on the inspector's live stream", () => {
  it("is answered with the stream's headers and no body, instead of hanging", async () => {
    const host = await startHost(bundle);
    const { hostname, port } = new URL(host.url);
    const answered = await new Promise<{ status: number | undefined; type: string | undefined; body: string }>((resolve, reject) => {
      const req = request({ hostname, port, path: "/inspector/api/stream", method: "HEAD", timeout: 5_000 }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode, type: res.headers["content-type"], body }));
      });
      req.on("timeout", () => req.destroy(new Error("no answer within 5 s")));
      req.on("error", reject);
      req.end();
    });
    expect(answered).toEqual({ status: 200, type: "text/event-stream; charset=utf-8", body: "" });
  });
});
