import type { PiModelCatalog } from "@assemblyline-agents/pi";
import { defaultPiHarness } from "../pi-engine.js";
import { randomUUID } from "node:crypto";
import { STATUS_CODES, createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { AssemblyLineError, isAssemblyLineError, isScheduleClaimableBy, MAX_TIMER_MS, routedPath, type ChannelModule, type JsonValue, type TelemetrySink } from "@assemblyline-agents/core";
import { OpenEveRuntime, createRuntimeLogger, isAutomationSchedule } from "@assemblyline-agents/runtime";
import { AttachmentIngest } from "./attachments.js";
import { HostAuth } from "./auth.js";
import { ChannelIngress } from "./channel-ingress.js";
import { channelSecretNeeds, checkChannelSecrets } from "./channel-secrets.js";
import { killSwitchRoutes, probeRoutes } from "./control.js";
import { clientErrorResponse, errorResponse, headerRecord, isClientAbort, limitBodyIdle, requestTarget, sendJson, type ClientError } from "./http.js";
import { inspectionRoutes } from "./inspection.js";
import { withBuiltInModelRoutes } from "./model-routes.js";
import { inspectorRoutes } from "./inspector/routes.js";
import { IngressKillSwitch } from "./kill-switch.js";
import { noteAgentOnStore } from "./shared-store.js";
import { ConversationMailbox } from "./mailbox.js";
import { resolveHostConfig, type NodeRuntimeOptions } from "./options.js";
import { DeliveryOutbox } from "./outbox.js";
import { resolveRateLimit, type IngressRateLimiter } from "./rate-limit.js";
import { RunRecovery } from "./recovery.js";
import { Router, type RequestContext } from "./router.js";
import { RunWatcher } from "./run-watcher.js";
import { createShutdown } from "./shutdown.js";

/** A listening host. */
export interface NodeRuntimeHandle {
  /** Base URL, e.g. http://127.0.0.1:3000. */
  readonly url: string;
  readonly port: number;
  readonly runtime: OpenEveRuntime;
  readonly server: Server;
  /**
   * Drain and stop (idempotent, every call the same promise): /readyz 503, listener + ingress, scheduler,
   * workers, runtime.onIdle(), telemetry flush, state close. A failing step does not stop the others;
   * once all ran, the promise rejects with AL_ERR_HOST_SHUTDOWN naming the failed steps (`details.steps`).
   */
  shutdown(options?: { timeoutMs?: number }): Promise<void>;
  /** Resolves once shutdown has completed, whether or not a step failed (shutdown() rejects then). */
  readonly closed: Promise<void>;
}

/** How long a connection answered with a parser refusal stays open for the client to read the answer and close. */
const REFUSED_CONNECTION_LINGER_MS = 2_000;

/** Paths the host serves itself; a channel route may not take them. */
const RESERVED_PREFIXES = ["/runs", "/admin", "/healthz", "/readyz", "/inspector"];

/**
 * Serve an agent over HTTP: its channels (`channels/*.ts`), the `/runs`
 * inspection and decision endpoints, probes and the kill switch, with
 * admission through the durable per-conversation mailbox, optional ingress
 * rate limits, the delivery outbox and recovery of orphaned runs.
 */
export async function listenNodeRuntime(options: NodeRuntimeOptions): Promise<NodeRuntimeHandle> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? createRuntimeLogger({ env });
  const config = resolveHostConfig(options, env);
  // Its options are checked here, before the runtime or anything else is started.
  const auth = new HostAuth(options.auth, env, config.devMode, logger);

  let channels: Record<string, ChannelModule> = {};
  let rateLimiter: IngressRateLimiter | undefined;
  const runtime = new OpenEveRuntime({
    ...options,
    // A raw route (no deliver()) reads its reply from the run: no delivery row for the outbox to complete.
    // A channel this revision lacks still gets one: another build's host may send it, or the outbox fails it visibly.
    owesDelivery: (name) => {
      const module = channels[name];
      return module === undefined || delivers(module);
    },
    // A failed run tells only a channel that can say so (deliverFailure()): others were never told, and are not.
    owesFailureDelivery: (name) => typeof channels[name]?.deliverFailure === "function",
    // The default engine, with the host's model catalog (RuntimeOptions.models), reading API keys from its env as Codex does.
    defaultHarness: options.defaultHarness ?? (await defaultPiHarness(options.models as PiModelCatalog | undefined, env)),
    modelHarnesses: withBuiltInModelRoutes(options.modelHarnesses, env),
    env,
    logger,
    maxConcurrentRuns: config.maxConcurrentRuns,
    maxQueuedRuns: config.maxQueuedRuns,
    leaseTtlMs: config.leaseTtlMs,
  });
  try {
    channels = collectChannels(runtime, options.sourceBundle.channels);
    // Checked once plugins have registered their channels (hooks.channel): theirs need their secrets too. Checked where
    // channel modules read them, process.env: a secret only in options.env would pass here and fail every request.
    checkChannelSecrets(channelSecretNeeds(options.manifest, channels), process.env, config.devMode, logger, options.env);
    // ASSEMBLY_LINE_RATE_LIMIT is read here: a malformed one must not leave the runtime open.
    rateLimiter = resolveRateLimit(runtime.manifest.agent.id, options.rateLimit, env, logger, (headers) => auth.verifiedFingerprint(headers));
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const watcher = new RunWatcher(runtime);
  const killSwitch = new IngressKillSwitch(runtime.state.settings, runtime.manifest.agent.id, logger);
  const attachments = new AttachmentIngest(
    { channels, blob: options.blob, files: runtime.state.files, runs: runtime.state.runs, logger },
    options.attachments,
  );
  const mailbox = new ConversationMailbox({
    runtime,
    maxConcurrentRuns: config.maxConcurrentRuns,
    maxQueuedRuns: config.maxQueuedRuns,
    logger,
    beforeStart: (runId) => attachments.ingestRun(runId),
  });
  const outbox = new DeliveryOutbox(runtime.state.runs, runtime.manifest.agent.id, channels, logger, { ...options.outbox, agentRevision: runtime.manifest.agentRevision });
  // A queued run younger than this may still be in a live replica's mailbox: the sweep and a duplicate turn leave it there.
  const adoptQueuedAfterMs = config.leaseTtlMs * 2;
  const recovery = new RunRecovery(runtime, mailbox, logger, adoptQueuedAfterMs);
  const ingress = new ChannelIngress({
    runtime,
    channels,
    mailbox,
    watcher,
    killSwitch,
    rateLimiter,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    model: options.model,
    adoptQueuedAfterMs,
    normalizeTimeoutMs: config.requestTimeoutMs,
  });
  const drainController = new AbortController();

  // Spans reach options.telemetry through the runtime's tracer (captureContent applied there).
  // Only runs from a channel with deliver() owe a delivery (owesDelivery above): without one, a
  // completion has nothing to claim, and rows of channels this revision lacks wait for the poll.
  if (Object.values(channels).some(delivers)) {
    runtime.hooks.event.tap("node-host:outbox", (event) => {
      if (event.type === "run.completed" || event.type === "run.failed") outbox.kick();
    });
  }

  const router = new Router();
  for (const route of [
    ...probeRoutes({ draining: () => drainController.signal.aborted, mailbox, killSwitch, stateReachable: () => stateReachable(runtime) }),
    ...inspectionRoutes(runtime, config.maxBodyBytes, drainController.signal),
    ...killSwitchRoutes(killSwitch, config.maxBodyBytes),
    ...inspectorRoutes(runtime, { captureContent: options.instrumentation?.captureContent ?? (config.devMode ? "content" : "usage"), draining: drainController.signal }),
  ]) {
    router.add(route);
  }
  // Checked before any channel route is added, so a route the router already has is one the host serves itself.
  try {
    checkChannelRoutes(channels, router);
  } catch (error) {
    await runtime.close();
    throw error;
  }
  for (const [name, module] of Object.entries(channels)) {
    const route = routedPath(module.config.route);
    const provider = typeof module.normalizeHttp === "function";
    for (const method of module.config.methods ?? ["POST"]) {
      router.add({ method, pattern: route, auth: provider ? "provider" : "channel", channel: name, handle: (ctx) => ingress.handle(name, ctx) });
    }
    if (!provider && !auth.configured) {
      if (config.devMode) logger.warn({ event: "security.open_route", channel: name, route }, "dev mode: this raw channel route accepts unauthenticated requests");
      else logger.warn({ event: "security.route_refused", channel: name, route }, "raw channel route without normalizeHttp refuses requests until host auth is configured");
    }
  }
  if (!auth.configured) {
    // Probes kept private (publicProbes: false) are refused with /runs: a platform's health check then fails, so say so.
    const guarded = auth.privateProbes ? "/runs, /admin, /healthz and /readyz" : "/runs and /admin";
    logger.warn(
      { event: config.devMode ? "security.open_inspection" : "security.inspection_refused" },
      config.devMode ? `dev mode: ${guarded} are unauthenticated` : `${guarded} refuse requests until ASSEMBLY_LINE_BEARER_TOKEN or auth is configured`,
    );
  }

  const server = createServer(
    {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      // Node checks both only this often (30 s unless told): a bound of 10 s would hold up to 40.
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(config.headersTimeoutMs / 2)),
    },
    (req, res) => void serve(req, res),
  );
  server.maxConnections = config.maxConnections;
  let lastFullWarning = -Infinity;
  server.on("drop", () => {
    // Once a minute at most: a flood of connections must not become a flood of log lines.
    if (Date.now() - lastFullWarning < 60_000) return;
    lastFullWarning = Date.now();
    logger.warn({ event: "http.connections_full", maxConnections: config.maxConnections }, "connections beyond maxConnections are closed as they arrive");
  });
  // The response each connection is answering, for a refusal of its bytes by Node's parser (below).
  const answering = new WeakMap<Duplex, ServerResponse>();
  // Connections already answered so: the parser reports each further piece they send as another error.
  const refused = new WeakSet<Duplex>();
  server.on("clientError", (error: Error & ClientError, socket: Duplex) => {
    if (refused.has(socket)) return;
    const inFlight = answering.get(socket);
    // Nothing can be said on a reset connection or inside a response already begun: close it, as Node would.
    if (error.code === "ECONNRESET" || !socket.writable || (inFlight !== undefined && inFlight.headersSent && !inFlight.writableEnded)) {
      socket.destroy();
      return;
    }
    refused.add(socket);
    const requestId = randomUUID();
    const { status, body } = clientErrorResponse(error, requestId, config);
    const text = JSON.stringify(body);
    // Written by hand: a refused request has no ServerResponse. Ended, not destroyed, so the client reads
    // the answer before the connection closes; one that never closes its side is cut off shortly after.
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
        `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${text}`,
    );
    const linger = setTimeout(() => socket.destroy(), REFUSED_CONNECTION_LINGER_MS).unref();
    socket.once("close", () => clearTimeout(linger));
    // A timed-out connection is often one a proxy opened and never used: not worth a line at info.
    logger[status === 408 ? "debug" : "info"]({ event: "http.client_error", requestId, status, code: body.error.code, parserCode: error.code }, "request refused before routing");
  });
  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    answering.set(req.socket, res);
    limitBodyIdle(req, config.bodyIdleTimeoutMs);
    const offered = req.headers["x-request-id"];
    const requestId = typeof offered === "string" && /^[\w.:-]{1,100}$/.test(offered) ? offered : randomUUID();
    res.setHeader("x-request-id", requestId);
    const method = (req.method ?? "GET").toUpperCase();
    let path = "/";
    let kind = "unknown";
    try {
      const url = requestTarget(req.url);
      // One spelling for routing, auth, handlers and logs: a policy must judge the path that is served.
      path = routedPath(url.pathname);
      const { route, params } = router.match(method, path);
      kind = route.auth;
      const ctx: RequestContext = { req, res, method, path, query: url.searchParams, params, headers: headerRecord(req), remoteAddress: config.clientAddress(req), requestId };
      if (route.auth !== "provider" && route.auth !== "public") {
        await auth.check({ kind: route.auth, method, path, headers: ctx.headers, remoteAddress: ctx.remoteAddress, ...(route.channel ? { channel: route.channel } : {}) });
      }
      await route.handle(ctx);
    } catch (error) {
      if (isClientAbort(error, req)) {
        logger.info({ event: "http.client_aborted", requestId, method, path }, "the client went away before the request was answered");
        res.destroy();
        return;
      }
      const { status, headers, body } = errorResponse(error, requestId);
      if (status === 500) logger.error({ event: "http.failed", requestId, method, path, err: error instanceof Error ? (error.stack ?? error.message) : String(error) }, "endpoint failed");
      if (status === 503 && isAssemblyLineError(error)) logger.warn({ event: "http.state_unavailable", requestId, method, path, err: error.message }, "the state store is unavailable");
      // The unread rest of an oversized or refused body is not worth reading: close the connection.
      if (!req.complete) headers.connection = "close";
      sendJson(res, status, body, headers);
    } finally {
      const fields = { event: "http.request", method, path, status: res.statusCode, durationMs: Math.round(performance.now() - started), requestId };
      if (kind === "probe") logger.debug(fields, "http request");
      else logger.info(fields, "http request");
    }
  }

  await noteAgentOnStore(runtime.state.settings, runtime.manifest.agent.id, logger);
  // Builds of earlier revisions stay only while an unfinished run needs them.
  await runtime.pruneRevisions().catch((error) => logger.warn({ event: "revisions.prune_failed", err: String(error) }, "pruning kept builds failed"));
  await recovery.start(config.recoveryIntervalMs);
  outbox.start();
  /** What a start that fails from here stops: nothing it started may outlive it (timers, the runtime's state). */
  const abandonStart = async () => {
    mailbox.stop();
    await Promise.allSettled([recovery.stop(), outbox.stop(), options.scheduler?.stop()]);
    await runtime.close();
  };
  try {
    // automations/ is written into the schedules facet before any scheduler looks for due rows.
    await runtime.automations.syncStatic();
    if (options.scheduler) {
      const agentId = runtime.manifest.agent.id;
      // The scheduler logs a dispatch that threw (it has no caller to throw to), and checks its lease against the catch-up window.
      await options.scheduler.start(async (scheduleId, claimed) => {
        const schedule = claimed ?? (await runtime.state.schedules.getSchedule(scheduleId));
        if (!schedule) return;
        if (!isScheduleClaimableBy(schedule, agentId)) {
          // A scheduler that ignores the start's agentId: the throw leaves the row to its own agent's host once this lease runs out.
          logger.warn({ event: "scheduler.agent_filter_ignored", scheduleId, agentId: schedule.agentId }, "the scheduler dispatched another agent's schedule; nothing started");
          throw new AssemblyLineError("AL_ERR_AUTOMATION_NOT_FOUND", `schedule ${scheduleId} belongs to agent ${schedule.agentId}, not ${agentId}`, {
            fix: "Use a scheduler that claims by agent (Scheduler.start's agentId, as LocalScheduler does); the row is left to its own agent's host.",
          });
        }
        if (isAutomationSchedule(schedule)) {
          const { nextRunAt, runs } = await runtime.automations.dispatchDue(schedule, options.model ? { model: options.model } : {});
          for (const run of runs) if (run.created) mailbox.enqueue(run.runId, run.conversationId, { prepare: false });
          return { nextRunAt };
        }
        const payload = (schedule.payload ?? {}) as Record<string, JsonValue>;
        if (typeof payload.message !== "string") {
          logger.warn({ event: "schedule.invalid", scheduleId }, "schedule payload has no message; nothing started");
          return;
        }
        const conversationId = typeof payload.conversationId === "string" ? payload.conversationId : null;
        const { runId, created } = await runtime.submit({
          message: payload.message,
          ...(conversationId ? { conversationId } : {}),
          idempotencyKey: `schedule:${scheduleId}:${schedule.nextRunAt}`,
          ...(options.model ? { model: options.model } : {}),
        });
        if (created) mailbox.enqueue(runId, conversationId, { prepare: false });
      }, { agentId, logger, automationCatchUpMs: runtime.automations.catchUpMs });
    }
  } catch (error) {
    await abandonStart();
    throw error;
  }
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    await abandonStart();
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`, {
      fix: "Pick a free port (option port, env PORT, or 0 for any) or another host.",
      cause: error,
    });
  }
  const address = server.address() as AddressInfo;
  const url = `http://${displayHost(address.address)}:${address.port}`;
  logger.info(
    { event: "host.listening", url, devMode: config.devMode, channels: Object.fromEntries(Object.entries(channels).map(([name, module]) => [name, module.config.route])), maxConcurrentRuns: config.maxConcurrentRuns, maxQueuedRuns: config.maxQueuedRuns },
    `listening on ${url}`,
  );

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const drain = createShutdown(
    {
      markDraining: () => {
        drainController.abort();
        ingress.drain();
      },
      closeListener: async (deadline) => {
        watcher.release();
        const listenerClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const idleSweep = setInterval(() => server.closeIdleConnections(), 25);
        try {
          await Promise.race([Promise.all([listenerClosed, ingress.settled()]), sleep(deadline - Date.now())]);
        } finally {
          clearInterval(idleSweep);
        }
      },
      stopScheduler: async () => {
        await options.scheduler?.stop();
      },
      stopWorkers: async () => {
        mailbox.stop();
        await Promise.all([recovery.stop(), outbox.stop()]);
      },
      runtimeIdle: () => runtime.onIdle(),
      flushTelemetry: (timeoutMs) => runtime.flushTelemetry({ timeoutMs }),
      // A rate-limiter store passed in may be shared with other hosts: its owner closes it.
      closeState: async () => {
        // MCP clients and stdio servers of connections end with the host.
        await options.connections?.close?.().catch((error) => logger.warn({ event: "connections.close_failed", err: String(error) }, "closing connections failed"));
        await runtime.state.close?.();
      },
      forceClose: () => server.closeAllConnections(),
    },
    logger,
    config.shutdownTimeoutMs,
  );
  const shutdown = (shutdownOptions?: { timeoutMs?: number }) => {
    const done = drain(shutdownOptions);
    void done.then(resolveClosed, resolveClosed);
    return done;
  };
  return { url, port: address.port, runtime, server, shutdown, closed };
}

/**
 * Every channel takes a route of its own, outside the host's: compared as routed (routedPath), so
 * `/message/` is `/message` and `//admin/x` is `/admin/x`. `router` holds the host's routes only.
 */
function checkChannelRoutes(channels: Record<string, ChannelModule>, router: Router): void {
  const channelRoutes = new Map<string, string>();
  for (const [name, module] of Object.entries(channels)) {
    // Compared as routed: "//admin/x" would otherwise pass the check and serve /admin/x.
    const route = routedPath(module.config.route);
    const other = channelRoutes.get(route);
    if (other !== undefined) {
      // A plugin's channel (hooks.channel) is not seen by the build, which refuses two of the agent's own.
      throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `channels ${other} (route ${channels[other]!.config.route}) and ${name} (route ${module.config.route}) are both routed at ${route}`, {
        fix: "Give each channel its own route: paths that differ only in their slashes (/message and /message/) are one route to the host.",
      });
    }
    if (RESERVED_PREFIXES.some((prefix) => route === prefix || route.startsWith(`${prefix}/`)) || router.has(route)) {
      const spelt = route === module.config.route ? route : `${module.config.route} (routed as ${route})`;
      throw new AssemblyLineError("AL_ERR_CHANNEL_DEFINITION", `channel ${name} takes route ${spelt}, which the host serves itself`, {
        fix: `Choose a route outside ${RESERVED_PREFIXES.join(", ")}.`,
      });
    }
    channelRoutes.set(route, name);
  }
}

/** Channel modules by name: the agent's channels/, plus any a plugin registers through hooks.channel. */
/** Whether a channel pushes replies itself (`deliver()`); one without is read from the run. */
function delivers(module: ChannelModule): boolean {
  return typeof module.deliver === "function";
}

function collectChannels(runtime: OpenEveRuntime, authored: Record<string, ChannelModule>): Record<string, ChannelModule> {
  const byRoute = new Map(Object.values(authored).map((module) => [module.config.route, module] as const));
  const registered = runtime.hooks.channel.call(byRoute);
  const names = new Map(Object.entries(authored).map(([name, module]) => [module, name] as const));
  const channels: Record<string, ChannelModule> = {};
  const routes = new Map<string, string>();
  for (const [route, module] of registered) {
    const name = names.get(module) ?? route.replace(/^\/+/, "").replace(/[^\w-]+/g, "-");
    // A run records its channel by name, and its reply goes to the channel of that name: two channels under one would cross replies.
    if (channels[name] !== undefined && channels[name] !== module) {
      throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `the channel routes ${routes.get(name)} and ${route} both get the channel name "${name}"`, {
        fix: "Give one of them another route: a plugin's channel is named after its route (\"/a/b\" and \"/a-b\" are both \"a-b\"), and a channels/ file after its file name.",
      });
    }
    channels[name] = module;
    routes.set(name, route);
  }
  return channels;
}

function displayHost(address: string): string {
  if (address === "0.0.0.0" || address === "") return "127.0.0.1";
  if (address === "::") return "[::1]";
  return address.includes(":") ? `[${address}]` : address;
}

/** Waits `ms`, at most MAX_TIMER_MS: a longer delay would make Node fire the timer at once. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(0, ms), MAX_TIMER_MS)).unref());
}

/** Whether the state store answers a read within 2 s (readiness): a trivial lookup, failing closed. */
async function stateReachable(runtime: OpenEveRuntime): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), 2_000);
  });
  try {
    return await Promise.race([runtime.state.runs.getRun("readiness-probe").then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
