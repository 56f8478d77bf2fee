import { NOT_IMPLEMENTED, subjectExport, type SubjectKitTemplate } from "../subject-kit-template.js";

export const channelTemplate: SubjectKitTemplate = {
  kind: "channel",
  contract: "channel@1",
  kit: "describeChannelConformance",
  file: "channel",
  helper: (names) => `define${names.pascal}Channel`,
  manifest: (request, names) => ({
    provides: [],
    channels: [{ name: request.id, export: `define${names.pascal}Channel`, contract: "channel@1", conformance: { module: "./testkit", export: subjectExport(names, "channel") } }],
  }),
  source: (request, names) => `import type { ChannelAck, ChannelDelivery, ChannelModule, ChannelRequest, ChannelTurn } from "@assemblyline-agents/core";

export interface ${names.pascal}ChannelOptions {
  /** The secret the provider signs its webhooks with. */
  signingSecret?: string;
  /** The provider's API base URL, where replies go. */
  apiBaseUrl?: string;
}

${NOT_IMPLEMENTED("channel")}
/**
 * The channel: normalizeHttp verifies the provider's signature (a forged
 * request throws an error with status 401) and turns an event into a turn with
 * a stable conversationId and the provider's event id; deliver posts the reply
 * to the provider (throwing when it refuses, so the outbox retries).
 */
export function define${names.pascal}Channel(options: ${names.pascal}ChannelOptions = {}): ChannelModule {
  return {
    config: { transport: "http", route: "/${request.id}/events", methods: ["POST"] },
    async normalizeHttp(request: ChannelRequest): Promise<ChannelTurn | ChannelAck> {
      throw notImplemented("normalizeHttp(" + request.path + ")");
    },
    async deliver(delivery: ChannelDelivery): Promise<void> {
      throw notImplemented("deliver() to " + (options.apiBaseUrl ?? "the provider") + " for run " + delivery.runId);
    },
  };
}
`,
  testkit: (_request, names) => `import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChannelKitEvent, ChannelKitSubject } from "@assemblyline-agents/core/testkit";
import { define${names.pascal}Channel } from "./channel.js";

const SECRET = "kit-signing-secret";

/**
 * The channel kit's subject: the channel against a local fake of the
 * provider. This fake signs webhooks with HMAC-SHA256 (x-signature, hex),
 * takes replies at POST /messages ({ eventId, text }) and serves attachments
 * at /files/<id>; make it speak your provider's API instead.
 */
export async function ${subjectExport(names, "channel")}(): Promise<{ state: ChannelKitSubject; cleanup(): Promise<void> }> {
  const received: Array<{ eventId: string; text: string }> = [];
  const files = new Map<string, Uint8Array>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const file = /^\\/files\\/(.+)$/.exec(req.url ?? "");
      if (req.method === "GET" && file && files.has(file[1]!)) return void res.writeHead(200).end(files.get(file[1]!));
      if (req.method === "POST" && req.url === "/messages") {
        received.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as { eventId: string; text: string });
        return void res.writeHead(200, { "content-type": "application/json" }).end("{}");
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const apiBaseUrl = "http://127.0.0.1:" + (server.address() as AddressInfo).port;
  const request = (event: ChannelKitEvent, secret: string | undefined) => {
    if (event.attachment) files.set(event.attachment.id, event.attachment.bytes);
    const body = {
      id: event.id,
      conversation: event.conversationKey,
      text: event.text,
      ...(event.attachment ? { attachment: { id: event.attachment.id, filename: event.attachment.filename, contentType: event.attachment.contentType, url: apiBaseUrl + "/files/" + event.attachment.id } } : {}),
    };
    const rawBody = new TextEncoder().encode(JSON.stringify(body));
    const signature = secret === undefined ? undefined : createHmac("sha256", secret).update(rawBody).digest("hex");
    return { method: "POST", path: "/events", headers: signature ? { "x-signature": signature } : {}, body, rawBody };
  };
  return {
    state: {
      module: define${names.pascal}Channel({ signingSecret: SECRET, apiBaseUrl }),
      request: (event) => request(event, SECRET),
      forgeries: (event) => [
        { name: "signed with another secret", request: request(event, "not-the-secret") },
        { name: "unsigned", request: request(event, undefined) },
      ],
      received: (eventId) => received.filter((message) => message.eventId === eventId).map((message) => message.text),
    },
    cleanup: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
`,
  usage: (request, names) => `// channels/${request.id}.ts
import { define${names.pascal}Channel } from "${request.packageName}";

export default define${names.pascal}Channel({ signingSecret: process.env.${request.id.toUpperCase().replace(/-/g, "_")}_SIGNING_SECRET });`,
  implement: (names) =>
    `Implement \`normalizeHttp\` and \`deliver\` of \`define${names.pascal}Channel\` in \`src/channel.ts\` for your
   provider, and make the fake provider in \`src/testkit.ts\` sign and accept requests the way it does.
   \`@assemblyline-agents/discord\` is a complete example.`,
};
