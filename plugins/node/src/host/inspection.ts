import type { JsonValue, RunEvent, RunListFilter, RunStatus } from "@assemblyline-agents/core";
import type { OpenEveRuntime, RunResult } from "@assemblyline-agents/runtime";
import { formatEvent } from "../cli/timeline.js";
import { requireAgentRun } from "./agent-runs.js";
import { eventWithoutDelivery, runWithoutDelivery } from "./delivery-withheld.js";
import { HttpError, optionalString, parseJsonObject, readBody, refuseUnknownFields, requiredString, sendJson } from "./http.js";
import type { RequestContext, Route } from "./router.js";
import { parseWait } from "./wait-query.js";

const STATUSES: RunStatus[] = ["queued", "running", "waiting_approval", "waiting_input", "completed", "failed"];
const MAX_PAGE = 200;
/** How long approve/deny/answer wait for the resumed run to rest before answering 202. */
const DEFAULT_DECISION_WAIT_MS = 30_000;

/**
 * The /runs endpoints: list with filters and paging, one run with everything
 * recorded about it, and the decisions that resume a paused run. Each serves
 * the host's agent's runs only: another agent's, in a shared store, is listed
 * nowhere and answered as an unknown id (requireAgentRun).
 */
export function inspectionRoutes(runtime: OpenEveRuntime, maxBodyBytes: number, draining: AbortSignal): Route[] {
  const runs = runtime.state.runs;
  const route = (method: string, pattern: string, handle: (ctx: RequestContext) => Promise<void>): Route => ({ method, pattern, auth: "runs", handle });

  return [
    route("GET", "/runs", async (ctx) => {
      // The store's agentId filter keeps other agents' runs (and this agent's subagent runs) out of the page.
      const filter: RunListFilter = { agentId: runtime.manifest.agent.id, limit: pageSize(ctx.query.get("limit")) };
      const statuses = ctx.query.getAll("status").flatMap((value) => value.split(",")).filter(Boolean);
      const unknown = statuses.find((status) => !STATUSES.includes(status as RunStatus));
      if (unknown) throw badQuery(`status=${unknown} is not one of ${STATUSES.join(", ")}`);
      if (statuses.length > 0) filter.status = statuses as RunStatus[];
      const conversationId = ctx.query.get("conversationId");
      if (conversationId) filter.conversationId = conversationId;
      const cursor = ctx.query.get("cursor");
      if (cursor) filter.cursor = cursor;
      const page = await runs.listRuns(filter);
      sendJson(ctx.res, 200, {
        runs: page.runs.map((run) => runWithoutDelivery(run)),
        nextCursor: page.nextCursor,
        ...(page.nextCursor ? { next: `/runs?${nextQuery(ctx.query, page.nextCursor)}` } : {}),
      });
    }),

    route("GET", "/runs/:runId", async (ctx) => {
      const runId = ctx.params.runId!;
      await requireAgentRun(runtime, runId);
      const result = await runtime.getRun(runId);
      const [run, events, toolCalls, checkpoint, deliveries, usage] = await Promise.all([
        runs.getRun(runId).then((found) => runWithoutDelivery(found)),
        runs.listEvents(runId).then((found) => found.map(eventWithoutDelivery)),
        runs.listToolCalls(runId),
        runs.getCheckpoint(runId),
        runs.listDeliveries(runId),
        runtime.state.usage.listUsage({ runId }).catch(() => []),
      ]);
      sendJson(ctx.res, 200, {
        run,
        result,
        events,
        toolCalls,
        checkpoint: checkpoint ?? null,
        deliveries,
        usage: { records: usage, ...usageTotals(usage) },
        timeline: events.map(timelineEntry),
      });
    }),

    route("GET", "/runs/:runId/events", async (ctx) => {
      const afterSeq = wholeQueryNumber(ctx.query.get("afterSeq"), "afterSeq", 0, Number.MAX_SAFE_INTEGER, "the seq of the last event read, 0 for the first page") ?? 0;
      await requireAgentRun(runtime, ctx.params.runId!);
      const events = await runs.listEvents(ctx.params.runId!, { afterSeq, limit: pageSize(ctx.query.get("limit")) });
      sendJson(ctx.res, 200, { events: events.map(eventWithoutDelivery) });
    }),

    route("POST", "/runs/:runId/approve", async (ctx) => {
      const body = parseJsonObject(ctx.req, await readBody(ctx.req, maxBodyBytes), { optional: true });
      refuseUnknownFields(body, ["callId", "runId", "actor"], APPROVE_EXAMPLE);
      const named = namedCall(body, APPROVE_EXAMPLE);
      const actor = optionalString(body, "actor") ?? "http";
      await decide(ctx, runtime, draining, (onRecorded) => runtime.approve(ctx.params.runId!, { ...named, actor, onRecorded }));
    }),

    route("POST", "/runs/:runId/deny", async (ctx) => {
      const body = parseJsonObject(ctx.req, await readBody(ctx.req, maxBodyBytes), { optional: true });
      refuseUnknownFields(body, ["callId", "runId", "reason", "actor"], DENY_EXAMPLE);
      const named = namedCall(body, DENY_EXAMPLE);
      const reason = optionalString(body, "reason");
      const actor = optionalString(body, "actor") ?? "http";
      await decide(ctx, runtime, draining, (onRecorded) => runtime.deny(ctx.params.runId!, { ...named, ...(reason ? { reason } : {}), actor, onRecorded }));
    }),

    route("POST", "/runs/:runId/answer", async (ctx) => {
      const body = parseJsonObject(ctx.req, await readBody(ctx.req, maxBodyBytes));
      refuseUnknownFields(body, ["answer", "callId", "runId", "actor"], ANSWER_EXAMPLE);
      const answer = requiredString(body, "answer", ANSWER_EXAMPLE);
      // With the question's callId, an answer that arrives after that question was answered is refused, not given to the next one.
      const named = namedCall(body, ANSWER_EXAMPLE);
      const actor = optionalString(body, "actor") ?? "http";
      await decide(ctx, runtime, draining, (onRecorded) => runtime.answer(ctx.params.runId!, answer, { ...named, actor, onRecorded }));
    }),
  ];
}

const APPROVE_EXAMPLE = '{"callId": "call_0_0"}, or with a subagent\'s call {"callId": "call_0_0", "runId": "<its runId>"}';
const DENY_EXAMPLE = '{"callId": "call_0_0", "reason": "not now"}';
const ANSWER_EXAMPLE = '{"answer": "yes", "callId": "call_0_0"}';

/**
 * The call a decision names: `callId` (or the approval's approvalId) and, for a subagent's call,
 * `runId`, each as given. Only a field left out means "none": a given callId, even "", names a call
 * (the runtime's contract), and an empty, blank or null one (a form field left empty, a variable
 * that was not set) is refused, as the CLI refuses it, rather than deciding whatever call waits.
 */
function namedCall(body: Record<string, JsonValue>, example: string): { callId?: string; runId?: string } {
  const callId = givenId(body, "callId", "call", "the callId (or approvalId) the run shows in pendingApprovals or questions, or leave it out for the only pending one", example);
  const runId = givenId(body, "runId", "run", "the runId of the call's pendingApprovals or questions entry (a subagent's run), or leave it out for a call of the run itself", example);
  return { ...(callId !== undefined ? { callId } : {}), ...(runId !== undefined ? { runId } : {}) };
}

function givenId(body: Record<string, JsonValue>, field: string, names: string, what: string, example: string): string | undefined {
  if (!Object.hasOwn(body, field)) return undefined;
  const value = body[field];
  if (typeof value === "string" && value.trim() !== "") return value;
  const given = value === null ? "null" : typeof value !== "string" ? `${Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : `a ${typeof value}`}, not a string` : value === "" ? "empty" : "blank";
  throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `body.${field} is ${given}, which names no ${names}: the run was left as it was`, {
    fix: `Send ${what}; e.g. ${example}.`,
  });
}

/**
 * Resume the run (resumes bypass admission) and answer with where it rests,
 * or 202 with its current state when it is still going `?wait` seconds after
 * the decision was recorded. A refused decision is always answered with its
 * error: the wait starts only once the runtime has taken the decision.
 */
async function decide(ctx: RequestContext, runtime: OpenEveRuntime, draining: AbortSignal, resume: (onRecorded: () => void) => Promise<RunResult>): Promise<void> {
  // The runtime refuses another agent's run too, but its refusal names that agent: answered here as an unknown id.
  await requireAgentRun(runtime, ctx.params.runId!);
  const waitMs = ctx.query.has("wait") ? parseWait(ctx.query.get("wait")) * 1000 : DEFAULT_DECISION_WAIT_MS;
  let onRecorded!: () => void;
  const recorded = new Promise<void>((resolve) => (onRecorded = resolve));
  const resumed = resume(onRecorded);
  // A failure after we answered 202 is the run's own (recorded as run.failed); do not leave it unhandled.
  resumed.catch(() => undefined);
  // Recorded, refused (thrown from here: answered with its status), or settled without recording
  // (a run woken by its ended subagent). Queued behind a drive of the same run in this process,
  // a decision is only checked once that drive rests; shutdown does not cut this short, since
  // answering 202 before the runtime took the decision could report a refusal as accepted.
  await Promise.race([recorded, resumed]);
  let timer: NodeJS.Timeout | undefined;
  // Removed when the request ends: the host's shutdown signal lives as long as the host.
  const listening = new AbortController();
  // Shutdown answers waiting callers at once; the run itself goes on until runtime.onIdle() or the timeout.
  const timedOut = new Promise<undefined>((resolve) => {
    if (draining.aborted) return resolve(undefined);
    timer = setTimeout(() => resolve(undefined), waitMs);
    draining.addEventListener("abort", () => resolve(undefined), { once: true, signal: listening.signal });
  });
  try {
    const result = await Promise.race([resumed, timedOut]);
    if (result) sendJson(ctx.res, 200, result);
    else sendJson(ctx.res, 202, await runtime.getRun(ctx.params.runId!));
  } finally {
    clearTimeout(timer);
    listening.abort();
  }
}

function pageSize(value: string | null): number {
  return wholeQueryNumber(value, "limit", 1, MAX_PAGE, `how many to answer, at most ${MAX_PAGE}`) ?? 50;
}

/** Digits only, as `?wait=` is read: Number() would also take hex, binary, octal, exponents and blanks (0x10, 1e2, "  "). */
const DIGITS = /^\d+$/;

/** A whole-number query parameter in min..max, or undefined when absent or empty; anything else is a 400 naming it. */
function wholeQueryNumber(value: string | null, name: string, min: number, max: number, meaning: string): number | undefined {
  if (value === null || value === "") return undefined;
  const number = DIGITS.test(value) ? Number(value) : Number.NaN;
  if (!(number >= min && number <= max)) {
    // Quoted as JSON and cut short: the value is the caller's, whatever it holds.
    const shown = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", `query parameter ${name}=${shown} is not a whole number in ${min}..${max === Number.MAX_SAFE_INTEGER ? "" : max}`, {
      fix: `Write ${name} in decimal digits (${meaning}), e.g. ?${name}=${Math.max(min, 20)}, or leave it out.`,
    });
  }
  return number;
}

function badQuery(problem: string): HttpError {
  return new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", problem, { fix: "GET /runs?status=waiting_approval&conversationId=c1&limit=20&cursor=<nextCursor>" });
}

function nextQuery(query: URLSearchParams, cursor: string): string {
  const next = new URLSearchParams(query);
  next.set("cursor", cursor);
  return next.toString();
}

function timelineEntry(event: RunEvent): { seq: number; at: string; type: string; line: string } {
  return { seq: event.seq, at: event.createdAt, type: event.type, line: formatEvent(event).trim() };
}

function usageTotals(records: Array<{ inputTokens: number; outputTokens: number; costUsd: number }>): Record<string, JsonValue> {
  return {
    inputTokens: records.reduce((sum, record) => sum + record.inputTokens, 0),
    outputTokens: records.reduce((sum, record) => sum + record.outputTokens, 0),
    costUsd: records.reduce((sum, record) => sum + record.costUsd, 0),
  };
}
