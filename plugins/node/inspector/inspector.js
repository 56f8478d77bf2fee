// The run inspector page: plain DOM, no framework, no build step.
// Run data is always inserted as text (never as HTML).

const TOKEN_KEY = "assembly-line.inspector.token";
const state = { status: "", runId: null, token: sessionStorage.getItem(TOKEN_KEY) || "", notice: "" };
const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

class AuthNeeded extends Error {}

async function api(path, options = {}) {
  const headers = { accept: "application/json", ...(options.body ? { "content-type": "application/json" } : {}) };
  if (state.token) headers.authorization = `Bearer ${state.token}`;
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401 || response.status === 403) {
    const problem = await response.json().catch(() => ({}));
    showAuth(problem?.error?.message || `HTTP ${response.status}`);
    throw new AuthNeeded();
  }
  return response;
}

function showAuth(message) {
  $("auth").hidden = false;
  $("auth-error").textContent = state.token ? `Refused: ${message}` : "";
  $("token").focus();
}

const STATUS_LABELS = {
  queued: "Queued",
  running: "Running",
  waiting_approval: "Waiting for approval",
  waiting_input: "Waiting for an answer",
  completed: "Completed",
  failed: "Failed",
};
const badge = (status) => el("span", { class: `badge ${status}`, text: STATUS_LABELS[status] || status });
const when = (iso) => el("time", { datetime: iso, text: new Date(iso).toLocaleTimeString() });

async function loadRuns() {
  listLoadedAt = Date.now();
  const query = state.status ? `?status=${encodeURIComponent(state.status)}` : "";
  const response = await api(`/inspector/api/runs${query}`);
  const body = await response.json();
  $("agent").textContent = `${body.agent.id} · ${body.agent.revision}`;
  const list = $("run-list");
  list.replaceChildren(
    ...body.runs.map((run) =>
      el(
        "li",
        {},
        el(
          "a",
          { href: `#/runs/${encodeURIComponent(run.id)}`, "aria-current": run.id === state.runId ? "true" : "false", "aria-label": `Run ${run.id}, ${STATUS_LABELS[run.status] || run.status}` },
          el("span", { class: "run-id", text: run.id }),
          badge(run.status),
        ),
      ),
    ),
  );
  $("runs-empty").hidden = body.runs.length > 0;
}

async function loadRun() {
  if (!state.runId) return;
  const response = await api(`/inspector/api/runs/${encodeURIComponent(state.runId)}`);
  if (response.status === 404) {
    $("detail-title").textContent = "Run not found";
    $("detail-body").replaceChildren(el("p", { class: "muted", text: `No run ${state.runId} on this host.` }));
    return;
  }
  renderRun(await response.json());
}

function body(label, text) {
  if (text === null || text === undefined) return null;
  return [el("h3", { text: label }), el("pre", { text })];
}

function renderRun(view) {
  const { run } = view;
  $("detail-title").replaceChildren(document.createTextNode("Run "), el("span", { class: "run-id", text: run.id }), " ", badge(run.status));
  const hidden = view.captureContent === "usage" || view.captureContent === "off";
  const parts = [
    el(
      "dl",
      { class: "facts" },
      el("dt", { text: "Status" }), el("dd", { text: STATUS_LABELS[run.status] || run.status }),
      el("dt", { text: "Started" }), el("dd", { text: new Date(run.createdAt).toLocaleString() }),
      el("dt", { text: "Model" }), el("dd", { text: run.modelSpec }),
      el("dt", { text: "Conversation" }), el("dd", { text: run.conversationId || "—" }),
      el("dt", { text: "Revision" }), el("dd", { text: run.agentRevision }),
      run.error ? [el("dt", { text: "Error" }), el("dd", { class: "error", text: errorText(run.error, view.captureContent) })] : null,
    ),
    hidden ? el("p", { class: "note", text: `Message bodies, tool input/output, error messages and questions are hidden (captureContent: ${view.captureContent}).` }) : null,
    ...pendingParts(view),
    body("Message", view.message),
    body("Response", view.response),
    el("h3", { text: shownOf("Timeline", view.timeline.length, view.timelineTotal, "events") }),
    el(
      "ol",
      { class: "timeline", "aria-label": "Events in order" },
      view.timeline.map((event) =>
        el(
          "li",
          { class: timelineClass(event.type) },
          el("span", { class: "seq", text: `#${event.seq}` }),
          el("span", { class: "type", text: event.type }),
          event.detail ? ` — ${event.detail}` : "",
          when(event.at),
        ),
      ),
    ),
    el("h3", { text: view.toolCallsTotal > view.toolCalls.length ? shownOf("Tool calls", view.toolCalls.length, view.toolCallsTotal, "calls") : "Tool calls" }),
    view.toolCalls.length === 0
      ? el("p", { class: "muted", text: "None." })
      : el(
          "table",
          {},
          el("caption", { class: "muted", text: "Each tool call, its status, input and output" }),
          el("thead", {}, el("tr", {}, ["Tool", "Status", "Input", "Output"].map((name) => el("th", { scope: "col", text: name })))),
          el(
            "tbody",
            {},
            view.toolCalls.map((call) =>
              el(
                "tr",
                {},
                el("td", {}, el("strong", { text: call.toolName }), el("div", { class: "muted run-id", text: call.callId })),
                el("td", {}, badge(call.status)),
                el("td", {}, call.input === null ? el("span", { class: "muted", text: "hidden" }) : el("pre", { text: call.input })),
                el("td", {}, call.error !== null ? el("pre", { class: "error", text: call.error }) : call.output === null ? el("span", { class: "muted", text: "—" }) : el("pre", { text: call.output })),
              ),
            ),
          ),
        ),
    el("h3", { text: view.stepsTotal > view.steps.length ? shownOf("Durable steps", view.steps.length, view.stepsTotal, "steps") : "Durable steps" }),
    view.steps.length === 0
      ? el("p", { class: "muted", text: "None." })
      : el("ul", {}, view.steps.map((step) => el("li", {}, el("code", { text: step.key }), step.replayed ? " (replayed)" : "", when(step.at)))),
    el("h3", { text: "Usage" }),
    el(
      "dl",
      { class: "facts" },
      el("dt", { text: "Model calls" }), el("dd", { text: String(view.usage.modelCalls) }),
      el("dt", { text: "Input tokens" }), el("dd", { text: String(view.usage.inputTokens) }),
      el("dt", { text: "Output tokens" }), el("dd", { text: String(view.usage.outputTokens) }),
      el("dt", { text: "Cost" }), el("dd", { text: `$${view.usage.costUsd.toFixed(4)}` }),
    ),
  ];
  const notice = state.notice ? el("p", { class: "error", role: "alert", text: state.notice }) : null;
  state.notice = "";
  $("detail-body").replaceChildren(...[notice, ...parts].flat().filter(Boolean));
}

/** A heading that says when the host sent only the newest part of a long list. */
function shownOf(label, shown, total, noun) {
  return total > shown ? `${label} (newest ${shown} of ${total} ${noun})` : `${label} (${shown} ${noun})`;
}

function timelineClass(type) {
  if (type.startsWith("tool.")) return "tool";
  if (type.startsWith("approval.") || type.startsWith("input.") || type.startsWith("run.waiting")) return "approval";
  if (type === "run.completed") return "end";
  if (type === "run.failed" || type.endsWith("failed")) return "fail";
  return "";
}

/** The run's error: its code, and its message where the capture mode shows it. */
function errorText(error, mode) {
  if (error.message === null) return `${error.code || "Error"} (message withheld under captureContent: ${mode})`;
  return `${error.code ? error.code + ": " : ""}${error.message}`;
}

/**
 * What a decision sends to name one pending call: its approvalId (unique, where a call id may be shared by
 * two subagents' calls) or its callId, and the runId of a subagent's call. A run's own names no runId.
 */
function callNamed(pending) {
  return { callId: pending.approvalId || pending.callId, ...(pending.runId ? { runId: pending.runId } : {}) };
}

/** "in subagent researcher (run …)" for a call or budget of a subagent run, else nothing. */
function whose(pending) {
  return pending.runId ? ` (subagent ${pending.subagent || "?"}, run ${pending.runId})` : "";
}

/** What an approval lets through beyond the call's input: the change a run-time API would make, or the skill file it would write. */
function changeParts(pending) {
  const parts = [];
  if (pending.change !== null && pending.change !== undefined) parts.push(el("p", { text: "Change:" }), el("pre", { class: "change", text: pending.change }));
  const write = pending.skillWrite;
  if (write) {
    parts.push(el("p", { class: "skill-write", text: `Skill file to ${write.action}: /skills/${write.name}/${write.path}` }));
    if (write.proposed !== null) parts.push(el("pre", { class: "skill-proposed", text: write.proposed }));
  }
  return parts;
}

function pendingParts(view) {
  const parts = [];
  // Element ids by position: two pending calls may share a call id (two subagents), never a position.
  view.pendingApprovals.forEach((pending, index) => {
    const reasonId = `deny-reason-${index}`;
    const named = callNamed(pending);
    parts.push(
      el(
        "section",
        { class: "pending", "aria-label": `Approval needed for ${pending.toolName}${whose(pending)}` },
        el("h3", { text: `Approval needed: ${pending.toolName}${whose(pending)}` }),
        pending.reason ? el("p", { text: pending.reason }) : null,
        pending.input !== null ? el("pre", { text: pending.input }) : null,
        ...changeParts(pending),
        el(
          "div",
          { class: "actions" },
          el("button", { type: "button", class: "approve", onclick: (event) => decide("approve", named, event.currentTarget) }, "Approve"),
          el("div", { class: "grow" }, el("label", { for: reasonId, text: "Reason for denying (optional)" }), el("input", { id: reasonId, type: "text" })),
          el("button", { type: "button", class: "deny", onclick: (event) => decide("deny", { ...named, reason: $(reasonId).value || undefined }, event.currentTarget) }, "Deny"),
        ),
      ),
    );
  });
  for (const pending of view.pendingBudgets) {
    const { budget, used, limit } = pending;
    // A budget names no call: a subagent's is decided by its run's id, the run's own by nothing.
    const named = pending.runId ? { runId: pending.runId } : {};
    parts.push(
      el(
        "section",
        { class: "pending", "aria-label": `Budget ${budget} reached${whose(pending)}` },
        el("h3", { text: `Budget ${budget} reached (${used} of ${limit})${whose(pending)}` }),
        el("p", { text: "Approve to extend the budget and let the run go on; deny to fail the run." }),
        el(
          "div",
          { class: "actions" },
          el("button", { type: "button", class: "approve", onclick: (event) => decide("approve", named, event.currentTarget) }, "Approve (extend)"),
          el("button", { type: "button", class: "deny", onclick: (event) => decide("deny", named, event.currentTarget) }, "Deny (fail)"),
        ),
      ),
    );
  }
  view.questions.forEach((question, index) => {
    const answerId = `answer-text-${index}`;
    parts.push(
      el(
        "section",
        { class: "pending", "aria-label": `Question waiting for an answer${whose(question)}` },
        el("h3", { text: `The run asks${whose(question)}` }),
        question.question === null
          ? el("p", { class: "note", text: `The question's text is withheld under captureContent: ${view.captureContent}. Your answer still goes to this question (${question.callId}).` })
          : el("p", { text: question.question }),
        el(
          "form",
          {
            class: "actions",
            onsubmit: (event) => {
              event.preventDefault();
              decide("answer", { answer: $(answerId).value, callId: question.callId, ...(question.runId ? { runId: question.runId } : {}) }, event.submitter);
            },
          },
          el("div", { class: "grow" }, el("label", { for: answerId, text: "Answer" }), el("textarea", { id: answerId, rows: 2, required: true })),
          el("button", { type: "submit", class: "answer" }, "Answer"),
        ),
      ),
    );
  });
  return parts;
}

async function decide(action, payload, button) {
  if (button) button.disabled = true;
  $("live").textContent = `Sending ${action}…`;
  try {
    const response = await api(`/runs/${encodeURIComponent(state.runId)}/${action}`, { method: "POST", body: JSON.stringify({ ...payload, actor: "inspector" }) });
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      alertMessage(problem?.error?.message || `HTTP ${response.status}`);
    }
  } catch (error) {
    if (!(error instanceof AuthNeeded)) alertMessage(String(error));
  } finally {
    if (button) button.disabled = false;
    await refresh();
  }
}

function alertMessage(text) {
  state.notice = text;
}

let refreshing = null;
/** What the next refresh reloads: the run list, the open run's view. */
const stale = { runs: false, run: false };
async function refresh(what = { runs: true, run: true }) {
  stale.runs ||= what.runs;
  stale.run ||= what.run;
  if (refreshing) return refreshing;
  refreshing = (async () => {
    while (stale.runs || stale.run) {
      const loads = [stale.runs ? loadRuns() : null, stale.run ? loadRun() : null];
      stale.runs = stale.run = false;
      try {
        await Promise.all(loads);
      } catch (error) {
        if (!(error instanceof AuthNeeded)) console.error(error);
      }
    }
  })();
  await refreshing;
  refreshing = null;
}

/**
 * A run's event makes the open run's view stale only when it is that run's; the
 * list (ids and statuses) is reloaded at most once a second however many runs
 * are busy, so an open page does not refetch without pause under load.
 */
const LIST_INTERVAL_MS = 1000;
let listLoadedAt = 0;
let listTimer = null;
function onRunEvent(runId) {
  if (runId === state.runId) void refresh({ runs: false, run: true });
  if (listTimer !== null) return;
  listTimer = setTimeout(() => {
    listTimer = null;
    void refresh({ runs: true, run: false });
  }, Math.max(0, listLoadedAt + LIST_INTERVAL_MS - Date.now()));
}

/** The run id of a stream message (`data: {"runId":...}`); null when it carries none. */
function runIdOf(message) {
  const data = /^data: (.*)$/m.exec(message)?.[1];
  try {
    return data ? JSON.parse(data).runId ?? null : null;
  } catch {
    return null;
  }
}

/** Server-sent events over fetch, so the bearer token can go in a header. */
async function listen() {
  for (;;) {
    try {
      const response = await api("/inspector/api/stream", { headers: {} });
      $("live").textContent = "Live";
      $("live").classList.add("on");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const message = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (message.startsWith("event: run")) onRunEvent(runIdOf(message));
        }
      }
    } catch (error) {
      if (error instanceof AuthNeeded) return;
    }
    $("live").textContent = "Reconnecting…";
    $("live").classList.remove("on");
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function route() {
  // Other hashes (the skip link) leave the selection alone.
  if (location.hash !== "" && !location.hash.startsWith("#/")) return;
  const match = /^#\/runs\/(.+)$/.exec(location.hash);
  state.runId = match ? decodeURIComponent(match[1]) : null;
  void refresh();
}

function start() {
  $("status-filter").addEventListener("change", (event) => {
    state.status = event.target.value;
    void refresh();
  });
  $("auth-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem(TOKEN_KEY, state.token);
    $("auth").hidden = true;
    void refresh();
    void listen();
  });
  window.addEventListener("hashchange", () => {
    route();
    $("detail").focus();
  });
  route();
  void listen();
}

start();
