import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChannelModule, ChannelRequest } from "@assemblyline-agents/core";
import { describeChannelConformance, type ChannelKitEvent, type ChannelKitSubject } from "@assemblyline-agents/core/testkit";
import provider, * as providerExports from "./fixtures/host-agent/channels/provider.js";

/**
 * The HTTP provider channel of the host fixture (HMAC-signed webhooks, replies
 * POSTed to a delivery URL, attachments behind a bearer token) against the
 * channel kit, with a local server playing the provider.
 */
describeChannelConformance("http provider channel", async () => {
  const secret = "kit-secret";
  const token = "kit-token";
  const deliveries: Array<{ text: string; metadata?: { eventId?: string } }> = [];
  const files = new Map<string, Uint8Array>();
  let failures = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/deliver") {
        if (failures > 0) {
          failures -= 1;
          res.writeHead(500).end();
          return;
        }
        deliveries.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        res.writeHead(200).end();
        return;
      }
      const file = files.get(req.url ?? "");
      if (!file || req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(file ? 401 : 404).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/plain" }).end(file);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The fixture module reads process.env per call, as provider modules do.
  const saved = { FIXTURE_SECRET: process.env.FIXTURE_SECRET, FIXTURE_DELIVERY_URL: process.env.FIXTURE_DELIVERY_URL, FIXTURE_TOKEN: process.env.FIXTURE_TOKEN };
  Object.assign(process.env, { FIXTURE_SECRET: secret, FIXTURE_DELIVERY_URL: `${base}/deliver`, FIXTURE_TOKEN: token });

  const module: ChannelModule = {
    config: { transport: "http", route: provider.route, methods: provider.methods ?? ["POST"] },
    normalizeHttp: providerExports.normalizeHttp,
    deliver: providerExports.deliver,
    resolveAttachment: providerExports.resolveAttachment,
  };
  const request = (raw: string, signWith: string | undefined): ChannelRequest => ({
    method: "POST",
    path: provider.route,
    headers: { "content-type": "application/json", ...(signWith !== undefined ? { "x-fixture-signature": createHmac("sha256", signWith).update(raw).digest("hex") } : {}) },
    body: JSON.parse(raw),
    rawBody: new TextEncoder().encode(raw),
  });
  const bodyOf = (event: ChannelKitEvent) => {
    if (event.attachment) files.set(`/files/${event.attachment.id}`, event.attachment.bytes);
    return JSON.stringify({
      type: "message",
      id: event.id,
      conversation: event.conversationKey,
      text: event.text,
      ...(event.attachment ? { attachments: [{ id: event.attachment.id, url: `${base}/files/${event.attachment.id}`, filename: event.attachment.filename }] } : {}),
    });
  };
  const state: ChannelKitSubject = {
    module,
    request: (event) => request(bodyOf(event), secret),
    forgeries: (event) => {
      const raw = bodyOf(event);
      return [
        { name: "signed with another secret", request: request(raw, "not-the-secret") },
        { name: "a body changed after signing", request: { ...request(raw, secret), rawBody: new TextEncoder().encode(raw.replace(event.text, "tampered")) } },
        { name: "no signature", request: request(raw, undefined) },
      ];
    },
    handshake: () => request(JSON.stringify({ type: "ping" }), secret),
    received: (eventId) => deliveries.filter((delivery) => delivery.metadata?.eventId === eventId).map((delivery) => delivery.text),
    failNextDelivery: () => {
      failures += 1;
    },
  };
  return {
    state,
    cleanup: async () => {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
});
