import type { ServerResponse } from "node:http";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";

/** Comment lines keep proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;
/** Bytes a client may leave unread before its stream is dropped: a page that stops reading must not grow the host. */
const MAX_UNREAD_BYTES = 256 * 1024;

interface Client {
  res: ServerResponse;
  runId: string | null;
}

/**
 * Server-sent events for the inspector page: one `run` message per committed
 * event (ids and type only, never data), so open pages refetch what changed.
 */
export class LiveUpdates {
  private readonly clients = new Set<Client>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(runtime: OpenEveRuntime, draining: AbortSignal) {
    runtime.hooks.event.tap("node-host:inspector", (event) => {
      // Every committed event passes here: with no page open, nothing is built for it.
      if (this.clients.size === 0) return;
      const message = `event: run\ndata: ${JSON.stringify({ runId: event.runId, seq: event.seq, type: event.type })}\n\n`;
      for (const client of this.clients) if (client.runId === null || client.runId === event.runId) this.send(client, message);
    });
    this.heartbeat = setInterval(() => {
      for (const client of this.clients) this.send(client, ": keep-alive\n\n");
    }, HEARTBEAT_MS).unref();
    // A draining host ends its streams so the listener can close.
    draining.addEventListener("abort", () => this.close(), { once: true });
  }

  open(res: ServerResponse, runId: string | null): void {
    // A client that left while its request was authorized is closed already: its 'close' will not come again.
    if (res.destroyed) return;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff", connection: "keep-alive", "x-accel-buffering": "no" });
    res.write(": connected\n\n");
    const client = { res, runId };
    this.clients.add(client);
    res.on("close", () => this.clients.delete(client));
  }

  private send(client: Client, text: string): void {
    if (client.res.writableLength > MAX_UNREAD_BYTES) {
      this.clients.delete(client);
      client.res.destroy();
      return;
    }
    client.res.write(text);
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const client of this.clients) client.res.end();
    this.clients.clear();
  }
}
