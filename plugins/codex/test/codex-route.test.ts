import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { CODEX_REQUEST_MAX_RETRIES, CODEX_STREAM_MAX_RETRIES, codexAgentHarness } from "../src/index.js";
import { ResponsesServer } from "../src/testkit/index.js";
import { NOTES_AGENT, agentFolder, codexHome, codexRuns, removeAll } from "./support.js";

const API_KEY = "sk-local-codex-test";
const binary = codexRuns();
if (!binary.ok) {
  if (process.env.CI === "true") throw new Error(`the codex binary must run in CI: ${binary.why}`);
  console.warn(`skipping the Codex route tests: ${binary.why}`);
}

const dirs: string[] = [];
let bundle: RuntimeBundle & { artifactRoot: string };
let server: ResponsesServer;
let home: string;

beforeAll(async () => {
  if (!binary.ok) return;
  const agentDir = agentFolder(NOTES_AGENT);
  dirs.push(agentDir);
  const { artifactRoot } = await buildAgent(agentDir);
  bundle = { ...(await loadRuntimeBundle(artifactRoot)), artifactRoot };
});

afterEach(async () => {
  await server?.stop();
});

afterAll(() => removeAll(dirs));

async function startModel(): Promise<void> {
  server = await new ResponsesServer(API_KEY).start();
  home = codexHome(server.baseUrl, API_KEY);
  dirs.push(home);
}

async function waitUntil(check: () => boolean, what: string, timeoutMs = 30_000, poll?: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await poll?.();
    if (check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const runtimeWith = (state: ConstructorParameters<typeof OpenEveRuntime>[0]["state"], env: Record<string, string | undefined>) =>
  new OpenEveRuntime({ ...bundle, state, modelHarnesses: { "openai-codex": codexAgentHarness({ env }) }, logger: noopLogger(), leaseTtlMs: 1_000 });

describe.skipIf(!binary.ok)(`the openai-codex route on the real app-server (${binary.why})`, () => {
  it("completes a tool call through the app-server, answered by the runtime's pipeline", async () => {
    await startModel();
    server.reply({ toolCalls: [{ callId: "call_lookup", name: "lookup_notes", arguments: { topic: "milk" } }] }, { text: "You wanted to buy milk on the way home." });
    const state = new InMemoryStateAdapter();
    const runtime = runtimeWith(state, { ...process.env, CODEX_HOME: home });
    try {
      const result = await runtime.run({ message: "What did I want to buy?" });
      expect(result).toMatchObject({ status: "completed", response: { text: "You wanted to buy milk on the way home." } });
      // The model saw our instructions, only our tools, and the pipeline's result.
      expect(server.requests[0]!.body.input.some((item) => JSON.stringify(item).includes("You keep notes for the user."))).toBe(true);
      const offered = (server.requests[0]!.body.tools ?? []).map((tool) => tool.name ?? tool.type);
      expect(offered).toEqual(expect.arrayContaining(["lookup_notes", "record_note"]));
      expect(offered).not.toContain("exec_command");
      expect(server.itemsOf(1, "function_call_output")).toEqual([expect.objectContaining({ call_id: "call_lookup", output: JSON.stringify({ notes: ["Buy milk on the way home"] }) })]);
      const events = (await runtime.listEvents(result.runId)).map((event) => event.type);
      expect(events).toEqual(expect.arrayContaining(["codex.thread_started", "tool.completed", "run.completed"]));
      const usage = await state.listUsage({ runId: result.runId });
      expect(usage.map((record) => [record.provider, record.model, record.inputTokens, record.outputTokens, record.cacheReadTokens])).toEqual([
        ["openai-codex", "gpt-5.1-codex", 100, 8, 20],
        ["openai-codex", "gpt-5.1-codex", 100, 8, 20],
      ]);
    } finally {
      await runtime.close();
    }
  });

  it("pauses for approval, then resumes in another process and finishes without repeating the call", async () => {
    await startModel();
    server.reply({ toolCalls: [{ callId: "call_note", name: "record_note", arguments: { note: "Buy milk" } }] }, { text: "Noted: Buy milk." });
    const stateDir = agentFolder({});
    dirs.push(stateDir);
    const runtime = runtimeWith(await FileStateAdapter.open({ directory: stateDir }), { ...process.env, CODEX_HOME: home });
    const paused = await runtime.run({ message: "Remember to buy milk" });
    await runtime.close();
    expect(paused.status).toBe("waiting_approval");
    expect(server.requests).toHaveLength(1);

    const child = await promisify(execFile)(process.execPath, [join(import.meta.dirname, "fixtures/approve-child.mjs"), bundle.artifactRoot, stateDir, paused.runId], {
      env: { ...process.env, CODEX_HOME: home },
      cwd: import.meta.dirname,
    });
    const { pid, result } = JSON.parse(child.stdout) as { pid: number; result: { status: string; response: { text: string } } };
    expect(pid).not.toBe(process.pid);
    expect(result).toMatchObject({ status: "completed", response: { text: "Noted: Buy milk." } });
    // The resumed thread was rebuilt from the continuation: the model saw its own call and the approved result.
    expect(server.requests).toHaveLength(2);
    expect(server.itemsOf(1, "function_call")).toEqual([expect.objectContaining({ call_id: "call_note", name: "record_note" })]);
    expect(server.itemsOf(1, "function_call_output")).toEqual([expect.objectContaining({ call_id: "call_note", output: JSON.stringify({ recorded: "Buy milk" }) })]);
    expect(server.itemsOf(1, "message").some((item) => JSON.stringify(item).includes("Remember to buy milk"))).toBe(true);

    const reopened = runtimeWith(await FileStateAdapter.open({ directory: stateDir }), { ...process.env, CODEX_HOME: home });
    try {
      const events = await reopened.listEvents(paused.runId);
      const recorded = events.filter((event) => event.type === "note.recorded");
      expect(recorded).toHaveLength(1);
      expect(recorded[0]!.data.pid).not.toBe(process.pid);
      expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(["approval.requested", "approval.granted", "run.completed"]));
    } finally {
      await reopened.close();
    }
  });

  it("resumes a run whose process was killed mid-turn, replaying the completed tool call instead of running it again", async () => {
    await startModel();
    const lookup = { toolCalls: [{ callId: "call_lookup", name: "lookup_notes", arguments: { topic: "milk" } }] };
    // Asked again after the crash, the model makes the same call under a new id, as the Responses API does.
    const again = { toolCalls: [{ callId: "call_lookup_again", name: "lookup_notes", arguments: { topic: "milk" } }] };
    server.reply(lookup, { hang: true }, again, { text: "Milk, on the way home." });
    const stateDir = agentFolder({});
    dirs.push(stateDir);
    // The killed process never reaches its turn's cleanup: its temp folders go in one this test removes.
    const childTmp = agentFolder({});
    dirs.push(childTmp);
    const child = spawn(process.execPath, [join(import.meta.dirname, "fixtures/run-child.mjs"), bundle.artifactRoot, stateDir, "What did I want to buy?"], {
      env: { ...process.env, CODEX_HOME: home, TMPDIR: childTmp },
      cwd: import.meta.dirname,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string];
      const { runId } = JSON.parse(line) as { runId: string };
      // The tool call completed and the model is being asked again when the process dies.
      await waitUntil(() => server.requests.length === 2, "the second model call");
      child.kill("SIGKILL");
      await exited;

      const runtime = runtimeWith(await FileStateAdapter.open({ directory: stateDir }), { ...process.env, CODEX_HOME: home });
      try {
        // The dead process's lease expires; recovery then takes the run over.
        let result: Awaited<ReturnType<typeof runtime.recoverRuns>>[number] | undefined;
        await waitUntil(() => result !== undefined, "the run to be recovered", 60_000, async () => {
          [result] = await runtime.recoverRuns();
        });
        expect(result).toMatchObject({ runId, status: "completed", response: { text: "Milk, on the way home." } });
        const events = await runtime.listEvents(runId);
        expect(events.filter((event) => event.type === "notes.looked_up")).toHaveLength(1);
        expect(events.map((event) => event.type)).toContain("tool.replayed");
        expect(server.itemsOf(3, "function_call_output")).toEqual([expect.objectContaining({ call_id: "call_lookup_again", output: JSON.stringify({ notes: ["Buy milk on the way home"] }) })]);
      } finally {
        await runtime.close();
      }
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
  });

  it("counts each model call against the run's maxTurns budget and fails the run at the first one past it", async () => {
    await startModel();
    server.reply({ toolCalls: [{ callId: "call_lookup", name: "lookup_notes", arguments: { topic: "milk" } }] }, { text: "one call too many" });
    const state = new InMemoryStateAdapter();
    const runtime = new OpenEveRuntime({
      ...bundle,
      state,
      modelHarnesses: { "openai-codex": codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }) },
      logger: noopLogger(),
      budgets: { maxTurns: 1 },
    });
    try {
      const result = await runtime.run({ message: "What did I want to buy?" });
      expect(result).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
      const events = await runtime.listEvents(result.runId);
      expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxTurns", limit: 1 });
      // The first call is journaled as a model call (a chat span for telemetry), with its usage.
      expect(events.filter((event) => event.type === "model.response").map((event) => event.data)).toEqual([
        expect.objectContaining({ step: "model:1", provider: "openai-codex", model: "gpt-5.1-codex", usage: expect.objectContaining({ inputTokens: 100, cacheReadTokens: 20, outputTokens: 8 }) }),
      ]);
      // The app-server made the refused call too: its tokens are spent, and recorded, each call under its own id.
      expect(server.requests).toHaveLength(2);
      const usage = await state.listUsage({});
      expect(usage).toHaveLength(2);
      expect(new Set(usage.map((record) => record.id)).size).toBe(2);
    } finally {
      await runtime.close();
    }
  });

  it("counts a model call that paused for approval against maxTurns, with its usage, and fails the run at the first one past it", async () => {
    await startModel();
    server.reply(
      { toolCalls: [{ callId: "call_1", name: "record_note", arguments: { note: "one" } }] },
      { toolCalls: [{ callId: "call_2", name: "record_note", arguments: { note: "two" } }] },
      { toolCalls: [{ callId: "call_3", name: "record_note", arguments: { note: "three" } }] },
      { text: "All three noted." },
    );
    const state = new InMemoryStateAdapter();
    const runtime = new OpenEveRuntime({
      ...bundle,
      state,
      modelHarnesses: { "openai-codex": codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }) },
      logger: noopLogger(),
      budgets: { maxTurns: 2 },
    });
    try {
      let result = await runtime.run({ message: "Note one, two and three." });
      for (let approvals = 0; result.status === "waiting_approval" && approvals < 5; approvals += 1) result = await runtime.approve(result.runId);
      expect(result).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
      const events = await runtime.listEvents(result.runId);
      expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxTurns", limit: 2 });
      expect(events.filter((event) => event.type === "note.recorded").map((event) => event.data.note)).toEqual(["one", "two"]);
      // Each paused call is journaled with the usage the server reported once the turn was interrupted.
      expect(events.filter((event) => event.type === "model.response").map((event) => [event.data.step, (event.data.usage as { inputTokens?: number } | undefined)?.inputTokens])).toEqual([
        ["model:1", 100],
        ["model:2", 100],
      ]);
      expect(server.requests).toHaveLength(3);
      // The refused call was made all the same: its tokens are recorded too.
      expect(await state.listUsage({ runId: result.runId })).toHaveLength(3);
    } finally {
      await runtime.close();
    }
  });

  it("fails the run when a tool call passes the maxToolCalls budget, instead of showing the model the refusal and asking it again", async () => {
    await startModel();
    server.reply(
      { toolCalls: [{ callId: "call_1", name: "lookup_notes", arguments: { topic: "milk" } }] },
      { toolCalls: [{ callId: "call_2", name: "lookup_notes", arguments: { topic: "eggs" } }] },
      { toolCalls: [{ callId: "call_3", name: "lookup_notes", arguments: { topic: "bread" } }] },
      { text: "Milk, and I could not look up the rest." },
    );
    const runtime = new OpenEveRuntime({
      ...bundle,
      state: new InMemoryStateAdapter(),
      modelHarnesses: { "openai-codex": codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } }) },
      logger: noopLogger(),
      budgets: { maxToolCalls: 1 },
    });
    try {
      const result = await runtime.run({ message: "What did I want to buy?" });
      expect(result).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
      const events = await runtime.listEvents(result.runId);
      expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxToolCalls", limit: 1 });
      expect(events.filter((event) => event.type === "notes.looked_up")).toHaveLength(1);
      // The refused call is left unanswered: no model call after it.
      expect(server.requests).toHaveLength(2);
    } finally {
      await runtime.close();
    }
  });

  it("fails a cancelled run with the cancellation's reason, recording the model call it cut short", async () => {
    await startModel();
    server.reply({ hang: true });
    const state = new InMemoryStateAdapter();
    const runtime = runtimeWith(state, { ...process.env, CODEX_HOME: home });
    const controller = new AbortController();
    try {
      const pending = runtime.run({ message: "What do I need to buy?", signal: controller.signal });
      await waitUntil(() => server.requests.length === 1, "the model call");
      controller.abort(new Error("the user cancelled the run"));
      const result = await pending;

      expect(result.status).toBe("failed");
      expect(result.error?.message).toBe("the user cancelled the run");
      const failed = (await runtime.listEvents(result.runId)).filter((event) => event.type === "model.failed");
      expect(failed.map((event) => [event.data.key, event.data.error])).toEqual([["model:1", "the user cancelled the run"]]);
    } finally {
      await runtime.close();
    }
  });

  it("fails on a provider that stays down after a bounded number of requests, with a fix for its status and neither the key nor the URL", async () => {
    await startModel();
    server.reply({ error: { status: 503, message: `overloaded (key ${API_KEY})` } });
    const runtime = runtimeWith(new InMemoryStateAdapter(), { ...process.env, CODEX_HOME: home });
    try {
      const result = await runtime.run({ message: "What do I need to buy?" });

      expect(result.status).toBe("failed");
      expect(result.error?.code).toBe("AL_ERR_MODEL_PROVIDER");
      const message = result.error?.message ?? "";
      expect(message).toContain("503");
      expect(message).toContain("rate limiting");
      expect(message).not.toContain("Check the model name");
      expect(message).not.toContain(API_KEY);
      expect(message).not.toContain(server.baseUrl.replace(/\/v1$/, ""));
      // Codex's HTTP retries for each of its stream retries, as bounded by the route (30 requests at Codex's defaults).
      expect(server.requests).toHaveLength((CODEX_REQUEST_MAX_RETRIES + 1) * (CODEX_STREAM_MAX_RETRIES + 1));
    } finally {
      await runtime.close();
    }
  }, 60_000);

  it("fails a run without a Codex login session, naming the command that fixes it, before any model call", async () => {
    server = await new ResponsesServer(API_KEY).start();
    const loggedOut = codexHome(server.baseUrl);
    dirs.push(loggedOut);
    server.reply({ text: "never" });
    const runtime = runtimeWith(new InMemoryStateAdapter(), { ...process.env, CODEX_HOME: loggedOut });
    try {
      const result = await runtime.run({ message: "hello" }).catch((error: unknown) => error);
      const failure = isAssemblyLineError(result) ? result : (result as { error?: { code?: string; message?: string } }).error;
      expect(JSON.stringify(failure ?? result)).toContain("AL_ERR_CODEX_LOGIN");
      expect(JSON.stringify(failure ?? result)).toContain("codex login");
      expect(server.requests).toHaveLength(0);
    } finally {
      await runtime.close();
    }
  });
});
