import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the service received it. */
export interface ReceivedRequest {
  method: string;
  /** The Host header's name, without its port: tests resolve several names to this one server. */
  host: string;
  /** The path with its query. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The raw body, "" when there was none. */
  body: string;
}

export interface RecordingService {
  port: number;
  /** Every request that reached the service, in order of arrival. */
  received: ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * An HTTP service on 127.0.0.1 that keeps every request it receives. `answer` replies to one;
 * without it (or when it leaves the response unsent) the service answers 200 `{"ok":true}`.
 */
export async function startRecordingService(answer?: (request: ReceivedRequest, res: ServerResponse) => void): Promise<RecordingService> {
  const received: ReceivedRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = { method: req.method ?? "GET", host: (req.headers.host ?? "").split(":")[0]!, url: req.url ?? "/", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
    received.push(request);
    answer?.(request, res);
    if (!res.headersSent) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
