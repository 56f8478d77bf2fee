import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createOtlpSink } from "@assemblyline-agents/otlp";
import { finishedSpan } from "./support/span.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

interface Seen {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A plain HTTP server that records every request and answers as `answer` says. */
async function serve(answer: (res: ServerResponse) => void): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", headers: req.headers, body });
      answer(res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("an OTLP endpoint that answers with a redirect", () => {
  it("keeps the sink's key headers and spans away from the origin a 307 points to, and reports the batch dropped", async () => {
    const elsewhere = await serve((res) => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    const collector = await serve((res) => res.writeHead(307, { location: `${elsewhere.origin}/collect?sig=QUERY-SECRET` }).end());
    const warnings: Array<{ message: string; fields: Record<string, unknown> }> = [];
    const sink = createOtlpSink({
      endpoint: collector.origin,
      headers: { "x-honeycomb-team": "HONEYCOMB-KEY", "x-api-key": "API-KEY" },
      scheduledDelayMs: 0,
      onWarning: (message, fields) => warnings.push({ message, fields }),
    });
    sink.export(finishedSpan());
    await sink.flush();
    expect(elsewhere.seen).toEqual([]);
    // A redirect is final, not retried.
    expect(collector.seen).toHaveLength(1);
    expect(sink.stats()).toMatchObject({ exported: 0, dropped: 1 });
    expect(warnings).toEqual([
      {
        message: expect.stringContaining(`HTTP 307, a redirect (to ${elsewhere.origin})`),
        fields: { event: "telemetry.spans_dropped", dropped: 1, status: 307 },
      },
    ]);
    expect(warnings[0]!.message).toContain("set the endpoint to the URL the collector redirects to");
    expect(warnings[0]!.message).not.toContain("QUERY-SECRET");
  });

  it("does not count as exported a batch a 301 would have resent as a GET without its spans", async () => {
    // An http:// endpoint behind a proxy that sends 301 to https://, whose catch-all answers 200.
    const elsewhere = await serve((res) => res.writeHead(200, { "content-type": "text/html" }).end("<html></html>"));
    const collector = await serve((res) => res.writeHead(301, { location: "/v1/traces/" }).end());
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: collector.origin, scheduledDelayMs: 0, onWarning: (message) => warnings.push(message) });
    sink.export(finishedSpan());
    await sink.flush();
    expect(elsewhere.seen).toEqual([]);
    expect(collector.seen.map((request) => request.method)).toEqual(["POST"]);
    expect(sink.stats()).toMatchObject({ exported: 0, dropped: 1 });
    // A relative Location is named by the origin it resolves to.
    expect(warnings).toEqual([expect.stringContaining(`HTTP 301, a redirect (to ${collector.origin})`)]);
  });
});
