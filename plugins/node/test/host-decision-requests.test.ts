import { request } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, type ModelScript, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, routedHarness, SCRIPTS, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("decision requests (approve, deny, answer)", () => {
  it("leave nothing behind on the host: many of them add no lasting listener to its shutdown signal", async () => {
    const host = await startHost(bundle);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      const done = await call(`${host.url}/message?wait=10`, { body: { message: "echo: done" } });
      expect(done.body.status).toBe("completed");
      // Refused (the run is finished), as a polling client's retries would be; each one used to keep a listener for good.
      for (let index = 0; index < 25; index += 1) expect((await call(`${host.url}/runs/${done.body.runId}/deny?wait=0`, { body: {} })).status).toBe(409);
      await new Promise((settle) => setImmediate(settle));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("answer 202 only for a decision the runtime took: a refused one gets its error whatever ?wait= says", async () => {
    const host = await startHost(bundle);
    const paused = await call(`${host.url}/message?wait=10`, { body: { message: "approve-slow: publish" } });
    expect(paused.body.status).toBe("waiting_approval");
    const callId: string = paused.body.pendingApprovals[0].callId;
    const approved = await call(`${host.url}/runs/${paused.body.runId}/approve?wait=0`, { body: { callId } });
    expect(approved.status).toBe(202);
    expect(approved.body.status).toBe("running");
    // The same call, already approved: the run goes on with its slow step, and this denial must not read as taken.
    const denied = await call(`${host.url}/runs/${paused.body.runId}/deny?wait=0`, { body: { callId } });
    expect(denied.status).toBe(409);
    expect(denied.body.error.code).toBe("AL_ERR_RUN_NOT_RESUMABLE");
    await expect.poll(async () => (await host.runtime.getRun(paused.body.runId)).status).toBe("completed");
    const types = (await host.runtime.listEvents(paused.body.runId)).map((event) => event.type);
    expect(types).toContain("approval.granted");
    expect(types).not.toContain("approval.denied");
  });

  it("check ?wait= as a message does: a bad value is a 400", async () => {
    const host = await startHost(bundle);
    const done = await call(`${host.url}/message?wait=10`, { body: { message: "echo: done" } });
    const bad = await call(`${host.url}/runs/${done.body.runId}/approve?wait=soon`, { body: {} });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "AL_ERR_HTTP_BODY_INVALID", message: expect.stringContaining('wait="soon" is not a decimal number of seconds') });
  });
});

describe("POST /runs/:id/answer names its question", () => {
  const askTwice: ModelScript = {
    turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which env?" } }] }, { toolCalls: [{ name: "ask_question", input: { question: "Delete it?" } }] }, { text: "done" }],
  };

  it("refuses (404) a late answer whose question was answered, instead of answering the question asked since", async () => {
    const host = await startHost(bundle, { agentHarness: routedHarness({ ...SCRIPTS, "ask-twice": askTwice }) });
    const first = await call(`${host.url}/message?wait=10`, { body: { message: "ask-twice: go" } });
    expect(first.body.status).toBe("waiting_input");
    const firstCall: string = first.body.question.callId;
    const second = await call(`${host.url}/runs/${first.body.runId}/answer`, { body: { answer: "prod", callId: firstCall } });
    expect(second.body).toMatchObject({ status: "waiting_input", question: { question: { question: "Delete it?" } } });
    // The same answer again (a retry, a second tab) names the first question: it must not say "prod" to "Delete it?".
    const late = await call(`${host.url}/runs/${first.body.runId}/answer`, { body: { answer: "prod", callId: firstCall } });
    expect(late.status).toBe(404);
    expect(late.body.error).toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining(firstCall) });
    expect((await host.runtime.getRun(first.body.runId)).question?.callId).toBe(second.body.question.callId);
    const done = await call(`${host.url}/runs/${first.body.runId}/answer`, { body: { answer: "no", callId: second.body.question.callId } });
    expect(done.body).toMatchObject({ status: "completed", response: { text: "done" } });
  });

  it("refuses (400) a field a decision route does not read, naming it, and decides nothing", async () => {
    const host = await startHost(bundle);
    const asked = await call(`${host.url}/message?wait=10`, { body: { message: "ask: colour" } });
    const paused = await call(`${host.url}/message?wait=10`, { body: { message: "approve: launch" } });
    const refusals = [
      [`/runs/${asked.body.runId}/answer`, { answer: "red", callid: asked.body.question.callId }, "callid"],
      [`/runs/${paused.body.runId}/approve`, { call_id: paused.body.pendingApprovals[0].callId }, "call_id"],
      [`/runs/${paused.body.runId}/deny`, { callId: paused.body.pendingApprovals[0].callId, reasons: "no" }, "reasons"],
    ] as const;
    for (const [path, body, field] of refusals) {
      const refused = await call(`${host.url}${path}`, { body });
      expect(refused.status, path).toBe(400);
      expect(refused.body.error).toMatchObject({ code: "AL_ERR_HTTP_BODY_INVALID", message: expect.stringContaining(`body.${field} is not a field`) });
    }
    expect((await host.runtime.getRun(asked.body.runId)).status).toBe("waiting_input");
    expect((await host.runtime.getRun(paused.body.runId)).status).toBe("waiting_approval");
  });

  it("refuses (400) an empty, blank or null callId or runId, naming it, instead of deciding the only pending call", async () => {
    const host = await startHost(bundle);
    const asked = await call(`${host.url}/message?wait=10`, { body: { message: "ask: colour" } });
    const paused = await call(`${host.url}/message?wait=10`, { body: { message: "approve: launch" } });
    const approve = `/runs/${paused.body.runId}/approve?wait=5`;
    const deny = `/runs/${paused.body.runId}/deny?wait=5`;
    const answer = `/runs/${asked.body.runId}/answer?wait=5`;
    const refusals = [
      [approve, { callId: "" }, "body.callId is empty"],
      [approve, { callId: null }, "body.callId is null"],
      [approve, { callId: "  " }, "body.callId is blank"],
      [approve, { runId: "" }, "body.runId is empty"],
      [deny, { callId: "", reason: "no" }, "body.callId is empty"],
      [deny, { callId: null }, "body.callId is null"],
      [deny, { runId: null }, "body.runId is null"],
      [answer, { answer: "red", callId: "" }, "body.callId is empty"],
      [answer, { answer: "red", callId: null }, "body.callId is null"],
      [answer, { answer: "red", runId: " " }, "body.runId is blank"],
      [answer, { answer: "red", callId: 7 }, "body.callId is a number, not a string"],
    ] as const;
    for (const [path, body, message] of refusals) {
      const refused = await call(`${host.url}${path}`, { body });
      expect(refused.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(refused.body.error).toMatchObject({ code: "AL_ERR_HTTP_BODY_INVALID", message: expect.stringContaining(message) });
    }
    expect((await host.runtime.getRun(asked.body.runId)).status).toBe("waiting_input");
    expect((await host.runtime.getRun(paused.body.runId)).status).toBe("waiting_approval");
    // Left out, either decides the only pending call, as before.
    expect((await call(`${host.url}${approve}`, { body: {} })).body.status).toBe("completed");
    expect((await call(`${host.url}${answer}`, { body: { answer: "red" } })).body.status).toBe("completed");
  });
});

describe("decisions for one call sent at once", () => {
  /** The decisions recorded for the run's call, and what each request was answered. */
  async function raced(runtime: { listEvents(runId: string): Promise<Array<{ type: string }>> }, runId: string, answers: Array<{ status: number; body: any }>) {
    const recorded = (await runtime.listEvents(runId)).map((event) => event.type).filter((type) => type === "approval.granted" || type === "approval.denied");
    return { recorded, taken: answers.filter((answer) => answer.status === 200).length, refused: answers.filter((answer) => answer.status !== 200).map((answer) => [answer.status, answer.body?.error?.code]) };
  }

  it("are decided once on one host: one is taken, the others refused", async () => {
    const host = await startHost(bundle);
    for (let round = 0; round < 3; round += 1) {
      const paused = await call(`${host.url}/message?wait=10`, { body: { message: "approve: launch", conversationId: `race-${round}` } });
      const callId = paused.body.pendingApprovals[0].callId;
      const decide = (action: string) => call(`${host.url}/runs/${paused.body.runId}/${action}?wait=5`, { body: { callId } });
      const outcome = await raced(host.runtime, paused.body.runId, await Promise.all([decide("approve"), decide("deny"), decide("approve")]));
      expect(outcome.recorded).toHaveLength(1);
      expect(outcome.taken).toBe(1);
      for (const [status] of outcome.refused) expect([404, 409], JSON.stringify(outcome.refused)).toContain(status);
    }
  });

  it("are decided once by two hosts sharing a store: approve on one, deny on the other", async () => {
    const state = new InMemoryStateAdapter();
    const a = await startHost(bundle, { state });
    const b = await startHost(bundle, { state });
    for (let round = 0; round < 3; round += 1) {
      const paused = await call(`${a.url}/message?wait=10`, { body: { message: "approve: launch", conversationId: `shared-${round}` } });
      const callId = paused.body.pendingApprovals[0].callId;
      const answers = await Promise.all([
        call(`${a.url}/runs/${paused.body.runId}/approve?wait=5`, { body: { callId } }),
        call(`${b.url}/runs/${paused.body.runId}/deny?wait=5`, { body: { callId } }),
      ]);
      const outcome = await raced(a.runtime, paused.body.runId, answers);
      expect(outcome.recorded).toHaveLength(1);
      expect(outcome.taken).toBe(1);
      for (const [status] of outcome.refused) expect([404, 409], JSON.stringify(outcome.refused)).toContain(status);
    }
  });
});

describe("HEAD on the inspector's live stream", () => {
  it("is answered with the stream's headers and no body, instead of hanging", async () => {
    const host = await startHost(bundle);
    const { hostname, port } = new URL(host.url);
    const answered = await new Promise<{ status: number | undefined; type: string | undefined; body: string }>((resolve, reject) => {
      const req = request({ hostname, port, path: "/inspector/api/stream", method: "HEAD", timeout: 5_000 }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode, type: res.headers["content-type"], body }));
      });
      req.on("timeout", () => req.destroy(new Error("no answer within 5 s")));
      req.on("error", reject);
      req.end();
    });
    expect(answered).toEqual({ status: 200, type: "text/event-stream; charset=utf-8", body: "" });
  });
});
