import { readFile } from "node:fs/promises";
import type { CaptureContent, RunStatus } from "@assemblyline-agents/core";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";
import { requireAgentRun } from "../agent-runs.js";
import { HttpError, sendJson } from "../http.js";
import type { RequestContext, Route } from "../router.js";
import { LiveUpdates } from "./live-updates.js";
import { runView, summary } from "./run-view.js";

/** The page's files: plain HTML, CSS and JS, served as they are. */
const ASSETS: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "inspector.css": "text/css; charset=utf-8",
  "inspector.js": "text/javascript; charset=utf-8",
};
const ASSET_DIR = new URL("../../../inspector/", import.meta.url);
/** Run data is for whoever asked, now: never kept by a cache, never read as anything but JSON. */
const DATA_HEADERS = { "cache-control": "no-store", "x-content-type-options": "nosniff" };
/**
 * The page loads only its own files and sends data only to its host; no base, form target, plugin or
 * frame around it. What a value that ever escaped the page's text nodes could do stays here.
 */
const PAGE_CSP = "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const STATUSES: RunStatus[] = ["queued", "running", "waiting_approval", "waiting_input", "completed", "failed"];

export interface InspectorOptions {
  /** What the page may show of bodies (the telemetry captureContent rules). */
  captureContent: CaptureContent;
  draining: AbortSignal;
}

/**
 * The run inspector: /inspector serves the page (no run data in it); every
 * piece of run data comes from /inspector/api/* behind the host's auth, like
 * /runs. Decisions go through the existing POST /runs/:id/approve|deny|answer.
 * Like /runs, it shows the host's agent's runs only: another agent's, in a
 * shared store, is not listed, not streamed and reads as an unknown id.
 */
export function inspectorRoutes(runtime: OpenEveRuntime, options: InspectorOptions): Route[] {
  const live = new LiveUpdates(runtime, options.draining);
  const page = (name: string): Route => ({
    method: "GET",
    pattern: name === "index.html" ? "/inspector" : `/inspector/${name}`,
    auth: "public",
    handle: async (ctx) => {
      const text = await readFile(new URL(name, ASSET_DIR), "utf8");
      ctx.res.writeHead(200, {
        "content-type": ASSETS[name]!,
        "cache-control": "no-cache",
        "x-content-type-options": "nosniff",
        "content-security-policy": PAGE_CSP,
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
      });
      ctx.res.end(text);
    },
  });
  const api = (pattern: string, handle: (ctx: RequestContext) => Promise<void>): Route => ({ method: "GET", pattern, auth: "runs", handle });

  return [
    ...Object.keys(ASSETS).map(page),
    api("/inspector/api/runs", async (ctx) => {
      const statuses = ctx.query.getAll("status").flatMap((value) => value.split(",")).filter(Boolean);
      const unknown = statuses.find((status) => !STATUSES.includes(status as RunStatus));
      if (unknown) throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `status=${unknown} is not one of ${STATUSES.join(", ")}`, { fix: "GET /inspector/api/runs?status=waiting_approval" });
      const page = await runtime.state.runs.listRuns({ agentId: runtime.manifest.agent.id, limit: 100, ...(statuses.length > 0 ? { status: statuses as RunStatus[] } : {}) });
      sendJson(ctx.res, 200, { agent: { id: runtime.manifest.agent.id, revision: runtime.manifest.agentRevision }, runs: page.runs.map(summary) }, DATA_HEADERS);
    }),
    api("/inspector/api/runs/:runId", async (ctx) => {
      await requireAgentRun(runtime, ctx.params.runId!);
      sendJson(ctx.res, 200, await runView(runtime, ctx.params.runId!, options.captureContent), DATA_HEADERS);
    }),
    api("/inspector/api/stream", async (ctx) => {
      live.open(ctx.res, ctx.query.get("runId"));
    }),
  ];
}
