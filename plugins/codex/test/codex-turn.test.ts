import { createHash } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { AssemblyLineError, canonicalJson, type HarnessTurnInput, type JsonValue, type ModelToolCall, type RuntimeLogger, type ToolCallOutcome } from "@assemblyline-agents/core";
import { KitHarnessContext, type KitTool } from "@assemblyline-agents/core/testkit";
import { codexAgentHarness } from "../src/index.js";
import { ResponsesServer } from "../src/testkit/index.js";
import { codexHome, codexRuns, removeAll } from "./support.js";

const API_KEY = "sk-local-codex-turn-test";
const binary = codexRuns();
if (!binary.ok) {
  if (process.env.CI === "true") throw new Error(`the codex binary must run in CI: ${binary.why}`);
  console.warn(`skipping the Codex turn tests: ${binary.why}`);
}

const dirs: string[] = [];
let server: ResponsesServer;

afterEach(async () => {
  await server?.stop();
});

afterAll(() => removeAll(dirs));

async function startModel(): Promise<ReturnType<typeof codexAgentHarness>> {
  server = await new ResponsesServer(API_KEY).start();
  const home = codexHome(server.baseUrl, API_KEY);
  dirs.push(home);
  return codexAgentHarness({ env: { ...process.env, CODEX_HOME: home } });
}

const schema = { type: "object", properties: { to: { type: "string" } }, additionalProperties: false };
const turnInput = (tools: string[]): HarnessTurnInput => ({
  runId: "run_codex_turn",
  agentRevision: "rev1",
  modelSpec: "openai-codex/gpt-5.1-codex",
  context: { instructions: "Be brief.", messages: [{ role: "user", content: "Send it all." }], tools: tools.map((name) => ({ name, description: `the ${name} tool`, inputSchema: schema })) },
});
const kitTool = (name: string): KitTool => ({ run: (input: JsonValue) => ({ done: name, input }) });

describe.skipIf(!binary.ok)(`a codex turn on the real app-server (${binary.why})`, () => {
  it("replays every completed parallel call after a crash, whatever order the app-server asks for them in", async () => {
    const harness = await startModel();
    const names = ["send_email", "charge_card", "book_room"];
    const tools = Object.fromEntries(names.map((name) => [name, kitTool(name)]));
    // Parallel calls, two of them identical: each identical call is a call of its own, run once each.
    const calls = (attempt: number) => [
      { callId: `call_${attempt}_a`, name: "send_email", arguments: { to: "ann" } },
      { callId: `call_${attempt}_b`, name: "charge_card", arguments: { to: "bob" } },
      { callId: `call_${attempt}_c`, name: "book_room", arguments: { to: "cy" } },
      { callId: `call_${attempt}_d`, name: "send_email", arguments: { to: "ann" } },
    ];
    server.reply({ toolCalls: calls(1) }, { text: "All done." });
    const first = new KitHarnessContext(tools);
    await expect(harness.runTurn(turnInput(names), first)).resolves.toMatchObject({ status: "completed" });
    expect(first.executed.sort()).toEqual(["book_room", "charge_card", "send_email", "send_email"]);
    // Journaled under ids of the run's own: the model call, the model's id, the call's content.
    const journalIds = first.toolCalls.map((call) => call.id).sort();
    expect(journalIds).toEqual([expect.stringMatching(/^model1_call_1_a_[0-9a-f]{12}(_2)?$/), expect.stringMatching(/^model1_call_1_b_[0-9a-f]{12}$/), expect.stringMatching(/^model1_call_1_c_[0-9a-f]{12}$/), expect.stringMatching(/^model1_call_1_d_[0-9a-f]{12}(_2)?$/)]);
    // The two identical calls share a content digest; whichever the app-server asked for second is told apart by a suffix.
    const identical = journalIds.filter((id) => /_[ad]_/.test(id));
    expect(identical.filter((id) => id.endsWith("_2"))).toHaveLength(1);
    expect(identical[0]!.replace(/^model1_call_1_[ad]_/, "").replace(/_2$/, "")).toBe(identical[1]!.replace(/^model1_call_1_[ad]_/, "").replace(/_2$/, ""));

    // The process died before the turn's result was kept: recovery asks the model again, and it makes
    // the same calls under new ids, in another order. The server's order of asking varies run to run.
    for (let attempt = 2; attempt <= 5; attempt += 1) {
      const again = calls(attempt);
      server.reply({ toolCalls: attempt % 2 === 0 ? again.reverse() : [...again.slice(1), again[0]!] }, { text: "All done." });
      const recovered = first.resume();
      await expect(harness.runTurn(turnInput(names), recovered)).resolves.toMatchObject({ status: "completed" });
      expect(recovered.executed).toEqual([]);
      // Each replayed under the journal id the same call was first given.
      expect(recovered.toolCalls.map((call) => call.id).sort()).toEqual(journalIds);
    }
  }, 120_000);

  it("runs a call again after a crash only when the model changed it", async () => {
    const harness = await startModel();
    const names = ["send_email", "charge_card"];
    const tools = Object.fromEntries(names.map((name) => [name, kitTool(name)]));
    server.reply(
      { toolCalls: [{ callId: "call_1_a", name: "send_email", arguments: { to: "ann" } }, { callId: "call_1_b", name: "charge_card", arguments: { to: "bob" } }] },
      { text: "Done." },
      { toolCalls: [{ callId: "call_2_b", name: "charge_card", arguments: { to: "bea" } }, { callId: "call_2_a", name: "send_email", arguments: { to: "ann" } }] },
      { text: "Done." },
    );
    const first = new KitHarnessContext(tools);
    await harness.runTurn(turnInput(names), first);
    const recovered = first.resume();
    await harness.runTurn(turnInput(names), recovered);
    expect(recovered.executed).toEqual(["charge_card"]);
    const sent = first.toolCalls.find((call) => call.name === "send_email")!.id;
    expect(recovered.toolCalls.map((call) => call.id).sort()).toEqual([sent, expect.stringMatching(/^model1_call_2_b_/)]);
  }, 60_000);

  it("runs the same call made again by the next response after an approval, instead of replaying the approved one", async () => {
    const harness = await startModel();
    const tools = { send_email: { ...kitTool("send_email"), approval: true } };
    server.reply(
      { toolCalls: [{ callId: "call_1", name: "send_email", arguments: { to: "ann" } }] },
      { toolCalls: [{ callId: "call_2", name: "send_email", arguments: { to: "ann" } }] },
      { text: "Sent twice." },
    );
    const first = new KitHarnessContext(tools);
    const paused = await harness.runTurn(turnInput(["send_email"]), first);
    expect(paused.status).toBe("paused");
    const approved = first.resume();
    approved.approved.add("send_email");
    const input = { ...turnInput(["send_email"]), continuation: paused.status === "paused" ? paused.continuation : undefined };
    await expect(harness.runTurn(input, approved)).resolves.toMatchObject({ status: "completed", response: { text: "Sent twice." } });
    expect(approved.executed).toEqual(["send_email", "send_email"]);
  }, 60_000);

  it("runs each response's call as a call of its own when the provider numbers calls per response (call_0 every time)", async () => {
    const harness = await startModel();
    server.reply(
      { toolCalls: [{ callId: "call_0", name: "send_email", arguments: { to: "ann" } }] },
      { toolCalls: [{ callId: "call_0", name: "send_email", arguments: { to: "ann" } }] },
      { text: "Sent twice." },
    );
    const ctx = new KitHarnessContext({ send_email: kitTool("send_email") });
    await expect(harness.runTurn(turnInput(["send_email"]), ctx)).resolves.toMatchObject({ status: "completed", response: { text: "Sent twice." } });
    expect(ctx.executed).toEqual(["send_email", "send_email"]);
    // Each under a journal id of its own; the model still sees its own ids.
    expect(ctx.toolCalls.map((call) => call.id)).toEqual([expect.stringMatching(/^model1_call_0_/), expect.stringMatching(/^model2_call_0_/)]);
    expect(server.itemsOf(2, "function_call_output").map((item) => item.call_id)).toEqual(["call_0", "call_0"]);
  }, 60_000);

  it("replays a call journaled before calls had journal ids of their own under the model id it first had", async () => {
    const harness = await startModel();
    // The step an earlier version wrote for model call 1's send_email({ to: "ann" }): the call's first id.
    const digest = createHash("sha256").update(canonicalJson(["send_email", { to: "ann" }])).digest("hex").slice(0, 32);
    const journal = {
      steps: new Map([[`codex:call:1:${digest}:1`, JSON.stringify({ callId: "call_old", tool: "send_email", arguments: { to: "ann" } })]]),
      toolResults: new Map<string, ToolCallOutcome>([["call_old", { status: "completed", output: { done: "send_email" }, isError: false }]]),
    };
    server.reply({ toolCalls: [{ callId: "call_new", name: "send_email", arguments: { to: "ann" } }] }, { text: "Sent." });
    const recovered = new KitHarnessContext({ send_email: kitTool("send_email") }, { journal });
    await expect(harness.runTurn(turnInput(["send_email"]), recovered)).resolves.toMatchObject({ status: "completed" });
    expect(recovered.executed).toEqual([]);
    expect(recovered.toolCalls.map((call) => call.id)).toEqual(["call_old"]);
  }, 60_000);

  it("keeps every call of a response when one pauses for approval, and runs them all on the resume", async () => {
    const harness = await startModel();
    server.reply(
      { toolCalls: [{ callId: "call_send", name: "send_email", arguments: { to: "ann" } }, { callId: "call_charge", name: "charge_card", arguments: { to: "bob" } }, { callId: "call_book", name: "book_room", arguments: { to: "cy" } }] },
      { text: "Sent, charged and booked." },
    );
    const tools = { send_email: { ...kitTool("send_email"), approval: true }, charge_card: { ...kitTool("charge_card"), approval: true }, book_room: kitTool("book_room") };
    const names = Object.keys(tools);
    const first = new KitHarnessContext(tools);
    const paused = await harness.runTurn(turnInput(names), first);
    expect(paused.status).toBe("paused");
    const continuation = paused.status === "paused" ? paused.continuation : undefined;
    // The call that paused, then the others in the order the server asked for them; book_room, which
    // needs no approval, ran before the pause when the server asked for it first.
    const pending = (continuation?.data as { pending: Array<{ callId: string; journalId: string }> }).pending;
    expect(pending.map((call) => call.callId)).toEqual(expect.arrayContaining(["call_charge", "call_send"]));
    expect([...pending.map((call) => call.callId), ...(first.executed.includes("book_room") ? ["call_book"] : [])].sort()).toEqual(["call_book", "call_charge", "call_send"]);
    expect(pending.every((call) => call.journalId.startsWith(`model1_${call.callId}_`))).toBe(true);
    const approved = first.resume();
    approved.approved.add("send_email");
    approved.approved.add("charge_card");
    await expect(harness.runTurn({ ...turnInput(names), continuation }, approved)).resolves.toMatchObject({ status: "completed", response: { text: "Sent, charged and booked." } });
    // Each call ran once, in one turn or the other.
    expect([...first.executed, ...approved.executed].sort()).toEqual(["book_room", "charge_card", "send_email"]);
    // The model was shown each call's real result, none filled in as aborted.
    const outputs = server.itemsOf(server.requests.length - 1, "function_call_output");
    expect(outputs.map((item) => [item.call_id, String(item.output).includes('"done"')]).sort()).toEqual([["call_book", true], ["call_charge", true], ["call_send", true]]);
  }, 60_000);

  it("refuses an agent tool named like Codex's own request_user_input, which the app-server always offers and would answer instead", async () => {
    const harness = await startModel();
    server.reply({ text: "unused" });
    const ctx = new KitHarnessContext({ request_user_input: kitTool("request_user_input") });
    const failure = await harness.runTurn(turnInput(["lookup", "request_user_input"]), ctx).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_CODEX_TOOL_NAME", message: expect.stringContaining('tool "request_user_input" has the name of a tool the Codex app-server keeps for itself') });
    expect(String((failure as Error).message)).toMatch(/fix: Rename the tool/);
    expect(server.requests).toHaveLength(0);
  }, 60_000);

  it("refuses an agent tool named exec_command, which Codex 0.169 drops even with its shell off (the model's call would be answered \"unsupported call\")", async () => {
    const harness = await startModel();
    server.reply({ text: "unused" });
    const ctx = new KitHarnessContext({ exec_command: kitTool("exec_command") });
    const failure = await harness.runTurn(turnInput(["exec_command"]), ctx).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_CODEX_TOOL_NAME", message: expect.stringContaining('tool "exec_command" has the name of a tool the Codex app-server keeps for itself') });
    expect(server.requests).toHaveLength(0);
  }, 60_000);

  it("refuses a call to Codex's own request_user_input, which it offers whatever the config, without running anything", async () => {
    const harness = await startModel();
    server.reply(
      { toolCalls: [{ callId: "call_q", name: "request_user_input", arguments: { questions: [{ id: "q1", header: "Pick", question: "Which one?", options: [{ label: "A", description: "a" }, { label: "B", description: "b" }] }] } }] },
      { text: "I will ask in my reply instead." },
    );
    const ctx = new KitHarnessContext({});
    await expect(harness.runTurn(turnInput([]), ctx)).resolves.toMatchObject({ status: "completed", response: { text: "I will ask in my reply instead." } });
    // Offered though the agent has no tools: no config turns it off (README, Limits).
    expect((server.requests[0]!.body.tools ?? []).map((tool) => tool.name ?? tool.type)).toEqual(["request_user_input"]);
    expect(ctx.toolCalls).toEqual([]);
    expect(server.itemsOf(1, "function_call_output")).toEqual([expect.objectContaining({ call_id: "call_q" })]);
  }, 60_000);

  it("fails the turn with the runtime's error when a tool call throws, without asking the model again", async () => {
    const harness = await startModel();
    server.reply({ toolCalls: [{ callId: "call_charge", name: "charge_card", arguments: { to: "bob" } }] }, { text: "The charge failed; I will not retry." });
    const lost = new AssemblyLineError("AL_ERR_RUN_LEASE_LOST", "run run_codex_turn was taken over by another replica", { fix: "Nothing to do: the replica that holds the lease goes on." });
    // The runtime refuses to go on (here its lease is lost); a tool's own failure would be an outcome, not a throw.
    class LeaseLostContext extends KitHarnessContext {
      override async callTool(call: ModelToolCall): Promise<ToolCallOutcome> {
        this.toolCalls.push(call);
        throw lost;
      }
    }
    const ctx = new LeaseLostContext({ charge_card: kitTool("charge_card") });
    await expect(harness.runTurn(turnInput(["charge_card"]), ctx)).rejects.toBe(lost);
    expect(ctx.toolCalls.map((call) => call.name)).toEqual(["charge_card"]);
    // The call stays unanswered: the model is not asked again with an error it would work around.
    expect(server.requests).toHaveLength(1);
    expect(ctx.events.map((event) => event.type)).not.toContain("model.failed");
  }, 60_000);

  it("tells the host the text streamed so far is void (ctx.textRestart) when Codex re-makes a stream that broke", async () => {
    const harness = await startModel();
    server.reply({ dropped: "Hello wo" }, { text: "Hello world" });
    const stream: string[] = [];
    class StreamContext extends KitHarnessContext {
      override textDelta(delta: string): void {
        stream.push(delta);
      }
      textRestart(): void {
        stream.push("<restart>");
      }
    }
    await expect(harness.runTurn(turnInput([]), new StreamContext({}))).resolves.toMatchObject({ status: "completed", response: { text: "Hello world" } });
    expect(server.requests).toHaveLength(2);
    // What a host shows: the deltas after the last break are the reply itself.
    expect(stream.join("")).toBe("Hello wo<restart>Hello world");
  }, 60_000);

  it("logs the provider's error without the key it echoes or the provider's URL", async () => {
    const harness = await startModel();
    const providerUrl = server.baseUrl.replace(/\/v1$/, "");
    server.reply({ error: { status: 401, message: `Incorrect API key provided: ${API_KEY}. Find your key at https://platform.example.com/account/api-keys.` } });
    const logged: string[] = [];
    const record = (level: string) => (fields: Record<string, unknown>, msg?: string) => void logged.push(`${level} ${JSON.stringify(fields)} ${msg ?? ""}`);
    class LoggedContext extends KitHarnessContext {
      override readonly logger: RuntimeLogger = { debug: () => undefined, info: record("info"), warn: record("warn"), error: record("error") };
    }
    const failure = await harness.runTurn(turnInput(["charge_card"]), new LoggedContext({})).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_MODEL_PROVIDER" });
    const warning = logged.find((line) => line.includes("codex.error"));
    expect(warning).toContain("401");
    for (const line of logged) {
      expect(line).not.toContain(API_KEY);
      expect(line).not.toContain(providerUrl);
      expect(line).not.toContain("platform.example.com");
    }
  }, 60_000);
});
