import type { ServerResponse } from "node:http";
import { isRunOfAgent, type RunEvent } from "@assemblyline-agents/core";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";

/** Comment lines keep proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;
/** Bytes a client may leave unread before its stream is dropped: a page that stops reading must not grow the host. */
const MAX_UNREAD_BYTES = 256 * 1024;
/** Runs whose agent is remembered (a run never changes agent): a bound, not a cache of every run ever seen. */
const KNOWN_RUNS = 10_000;

interface Client {
  res: ServerResponse;
  runId: string | null;
}

/**
 * Server-sent events for the inspector page: one `run` message per committed
 * event (ids and type only, never data), so open pages refetch what changed.
 * Only events of the host's agent's runs (and its subagents') are sent: a
 * stream for another agent's run stays as silent as one for an unknown id.
 */
export class LiveUpdates {
  private readonly clients = new Set<Client>();
  private readonly heartbeat: NodeJS.Timeout;
  /** Whether each run seen lately is the agent's, so its next events are not looked up again. */
  private readonly ofAgent = new Map<string, boolean>();
  /** Lookups under way: the events that wait on one are sent in the order they came. */
  private readonly lookups = new Map<string, Promise<boolean>>();
  /**
   * Set once the host drains: a stream opened after (its request was authorized while the drain
   * began) is ended at once, as the open ones were, so it does not hold the listener's close.
   */
  private closed = false;

  constructor(private readonly runtime: OpenEveRuntime, draining: AbortSignal) {
    runtime.hooks.event.tap("node-host:inspector", (event) => {
      // Every committed event passes here: with no page open, nothing is built for it.
      if (this.clients.size === 0) return;
      // The runtime journals its agent's runs only, but the stream does not rest on that: it checks
      // each run once. Not awaited: the observers of the run wait for no page.
      const known = this.ofAgent.get(event.runId);
      if (known === true) this.broadcast(event);
      else if (known === undefined) void this.lookUp(event.runId).then((own) => own && this.broadcast(event));
    });
    this.heartbeat = setInterval(() => {
      for (const client of this.clients) this.send(client, ": keep-alive\n\n");
    }, HEARTBEAT_MS).unref();
    // A draining host ends its streams so the listener can close.
    draining.addEventListener("abort", () => this.close(), { once: true });
  }

  private broadcast(event: RunEvent): void {
    const message = `event: run\ndata: ${JSON.stringify({ runId: event.runId, seq: event.seq, type: event.type })}\n\n`;
    for (const client of this.clients) if (client.runId === null || client.runId === event.runId) this.send(client, message);
  }

  private lookUp(runId: string): Promise<boolean> {
    const pending = this.lookups.get(runId);
    if (pending) return pending;
    const lookup = this.runtime.state.runs
      .getRun(runId)
      .then((run) => {
        const own = run !== undefined && isRunOfAgent(run, this.runtime.manifest.agent.id);
        if (this.ofAgent.size >= KNOWN_RUNS) this.ofAgent.delete(this.ofAgent.keys().next().value!);
        this.ofAgent.set(runId, own);
        return own;
      })
      // A store that does not answer shows nothing; the run's next event asks again.
      .catch(() => false)
      .finally(() => this.lookups.delete(runId));
    this.lookups.set(runId, lookup);
    return lookup;
  }

  open(res: ServerResponse, runId: string | null): void {
    // A client that left while its request was authorized is closed already: its 'close' will not come again.
    if (res.destroyed) return;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff", connection: "keep-alive", "x-accel-buffering": "no" });
    // HEAD (a health check) gets the headers only: Node sends no body for it, so a stream would never answer at all.
    if (res.req.method === "HEAD") return void res.end();
    res.write(": connected\n\n");
    // Ended like the streams open when the drain began: the client reconnects, to a host that is up.
    if (this.closed) return void res.end();
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
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const client of this.clients) client.res.end();
    this.clients.clear();
  }
}
