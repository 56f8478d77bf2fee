import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { haveChromium, headlessChromium } from "./support/chromium.js";
import { FIXTURE_AGENT, SCRIPTS, call, routedHarness, startHost, tempDir } from "./support/host.js";

/**
 * Two subagents spawned together, each pausing on the same script: their calls share a call id
 * (call_0_0), and the parent shows both, each with its runId. Deciding one of them needs the
 * approval's approvalId, or its callId with its runId.
 */
let bundle: RuntimeBundle;
beforeAll(async () => {
  const agentDir = join(tempDir("al-host-agent-"), "agent");
  cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
  const spawnTwo = (tool: string, subagent: string, task: string) => `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Two ${subagent}s at once.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  defaultEnabled: true,
  async execute(_input: {}, ctx: any) {
    return Promise.all(["one", "two"].map((topic) => ctx.spawnSubagent({ name: "${subagent}", task: "${task}: " + topic })));
  },
});
`;
  const files: Record<string, string> = {
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Publishes.", tools: ["publish"] });\n`,
    "subagents/asker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Asks." });\n`,
    "tools/research_all.ts": spawnTwo("research_all", "researcher", "approve"),
    "tools/ask_all.ts": spawnTwo("ask_all", "asker", "ask"),
    "tools/slow_all.ts": spawnTwo("slow_all", "researcher", "slow"),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(agentDir, file)), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  const { artifactRoot } = await buildAgent(agentDir);
  bundle = await loadRuntimeBundle(artifactRoot);
});

const harness = routedHarness({
  ...SCRIPTS,
  both: { turns: [{ toolCalls: [{ name: "research_all", input: {} }] }, { text: "both done" }] },
  "ask-both": { turns: [{ toolCalls: [{ name: "ask_all", input: {} }] }, { text: "both answered" }] },
  "slow-both": { turns: [{ toolCalls: [{ name: "slow_all", input: {} }] }, { text: "both slow" }] },
});

async function twoApprovals(host: { url: string }) {
  const paused = await call(`${host.url}/message?wait=10`, { body: { message: "both: go" } });
  expect(paused.body.status).toBe("waiting_approval");
  const [first, second] = paused.body.pendingApprovals;
  // The premise: one call id, two runs.
  expect(first.callId).toBe(second.callId);
  expect(first.runId).not.toBe(second.runId);
  return { runId: paused.body.runId as string, first, second };
}

async function twoQuestions(host: { url: string }) {
  const asked = await call(`${host.url}/message?wait=10`, { body: { message: "ask-both: go" } });
  expect(asked.body.status).toBe("waiting_input");
  const [first, second] = asked.body.questions;
  expect(first.callId).toBe(second.callId);
  expect(first.runId).not.toBe(second.runId);
  return { runId: asked.body.runId as string, first, second };
}

describe("approve, deny and answer over HTTP for one of two subagents' calls of the same id", () => {
  it("take the runId of the call's pendingApprovals entry and decide that call only", async () => {
    const host = await startHost(bundle, { agentHarness: harness });
    const { runId, first, second } = await twoApprovals(host);
    // The call id alone names two calls: refused, nothing decided.
    const ambiguous = await call(`${host.url}/runs/${runId}/approve?wait=5`, { body: { callId: first.callId } });
    expect(ambiguous.status).toBe(404);
    expect(ambiguous.body.error.code).toBe("AL_ERR_APPROVAL_NOT_FOUND");

    const denied = await call(`${host.url}/runs/${runId}/deny?wait=5`, { body: { callId: second.callId, runId: second.runId, reason: "not that one" } });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    expect(denied.body.pendingApprovals).toEqual([expect.objectContaining({ runId: first.runId, approvalId: first.approvalId })]);
    expect((await host.runtime.getRun(second.runId)).status).not.toBe("waiting_approval");
    expect((await host.runtime.getRun(first.runId)).status).toBe("waiting_approval");

    // The approvalId alone names one call too.
    const approved = await call(`${host.url}/runs/${runId}/approve?wait=5`, { body: { callId: first.approvalId } });
    expect(approved.body).toMatchObject({ status: "completed", response: { text: "both done" } });
    const decisions = async (child: string) => (await host.runtime.listEvents(child)).filter((event) => event.type.startsWith("approval.") && event.type !== "approval.requested").map((event) => event.type);
    expect(await decisions(first.runId)).toEqual(["approval.granted"]);
    expect(await decisions(second.runId)).toEqual(["approval.denied"]);
  });

  it("answer each of two subagents' questions by its callId and runId", async () => {
    const host = await startHost(bundle, { agentHarness: harness });
    const { runId, first, second } = await twoQuestions(host);
    const one = await call(`${host.url}/runs/${runId}/answer?wait=5`, { body: { answer: "red", callId: second.callId, runId: second.runId } });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body.questions).toEqual([expect.objectContaining({ runId: first.runId })]);
    const two = await call(`${host.url}/runs/${runId}/answer?wait=5`, { body: { answer: "blue", callId: first.callId, runId: first.runId } });
    expect(two.body).toMatchObject({ status: "completed", response: { text: "both answered" } });
  });

  it("refuse a runId the run does not wait on, deciding nothing", async () => {
    const host = await startHost(bundle, { agentHarness: harness });
    const { runId, first } = await twoApprovals(host);
    const refused = await call(`${host.url}/runs/${runId}/approve?wait=5`, { body: { callId: first.callId, runId: "run_elsewhere" } });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe("AL_ERR_APPROVAL_NOT_FOUND");
    expect((await host.runtime.getRun(runId)).pendingApprovals).toHaveLength(2);
  });
});

describe("the run inspector's view of a run waiting on two subagents", () => {
  it("carries each pending approval's approvalId, runId and subagent, and every question with its runId", async () => {
    const host = await startHost(bundle, { agentHarness: harness });
    const approvals = await twoApprovals(host);
    const view = (await call(`${host.url}/inspector/api/runs/${approvals.runId}`)).body;
    expect(view.pendingApprovals).toEqual(
      [approvals.first, approvals.second].map((pending) => expect.objectContaining({ approvalId: pending.approvalId, callId: pending.callId, runId: pending.runId, subagent: "researcher", toolName: "publish" })),
    );
    const questions = await twoQuestions(host);
    const asking = (await call(`${host.url}/inspector/api/runs/${questions.runId}`)).body;
    expect(asking.questions).toEqual(
      [questions.first, questions.second].map((question) => ({ callId: question.callId, runId: question.runId, subagent: "asker", toolName: "ask_question", question: "Which colour?" })),
    );
    expect(asking.question).toEqual(asking.questions[0]);
  });

  it("lists the budget each subagent run paused on with its runId, and decides one by it", async () => {
    const host = await startHost(bundle, { agentHarness: harness, budgets: { maxTurns: 1, onExceeded: "pause" } });
    const paused = await call(`${host.url}/message?wait=10`, { body: { message: "slow-both: go" } });
    expect(paused.body.status).toBe("waiting_approval");
    const children = paused.body.waitingOnAll.map((waiting: { runId: string }) => waiting.runId);
    expect(children).toHaveLength(2);
    const view = (await call(`${host.url}/inspector/api/runs/${paused.body.runId}`)).body;
    expect(view.pendingBudgets).toEqual(children.map((runId: string) => ({ budget: "maxTurns", used: expect.any(Number), limit: 1, runId, subagent: "researcher" })));
    const extended = await call(`${host.url}/runs/${paused.body.runId}/approve?wait=5`, { body: { runId: children[1] } });
    expect(extended.status, JSON.stringify(extended.body)).toBe(200);
    const after = (await call(`${host.url}/inspector/api/runs/${paused.body.runId}`)).body;
    expect(after.pendingBudgets.map((budget: { runId: string }) => budget.runId)).toEqual([children[0]]);
  });
});

describe.skipIf(!haveChromium)("the run inspector page deciding one of two subagents' calls of the same id, in headless chromium", () => {
  const browser = headlessChromium();

  it("denies the second with its own reason field and approves the first, each by its approvalId and runId", async () => {
    const host = await startHost(bundle, { agentHarness: harness });
    const { runId, first, second } = await twoApprovals(host);
    const page = await browser().newPage();
    try {
      const sent: unknown[] = [];
      page.on("request", (request) => {
        if (/\/(approve|deny)$/.test(request.url())) sent.push(request.postDataJSON());
      });
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(runId)}`);
      const regionOf = (pending: { runId: string }) => page.getByRole("region", { name: `Approval needed for publish (subagent researcher, run ${pending.runId})` });
      await regionOf(second).waitFor();
      // One reason field per approval: ids built from the shared call id made both labels point at the first field.
      const reasonIds = await page.locator("section.pending input[type=text]").evaluateAll((inputs) => inputs.map((input) => input.id));
      expect(reasonIds).toHaveLength(2);
      expect(new Set(reasonIds).size).toBe(2);
      await regionOf(second).getByLabel("Reason for denying (optional)").fill("not that one");
      await regionOf(second).getByRole("button", { name: "Deny" }).click();
      await regionOf(second).waitFor({ state: "detached", timeout: 15_000 });
      await regionOf(first).getByRole("button", { name: "Approve" }).click();
      await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 15_000 });
      expect(sent).toEqual([
        { callId: second.approvalId, runId: second.runId, reason: "not that one", actor: "inspector" },
        { callId: first.approvalId, runId: first.runId, actor: "inspector" },
      ]);
      expect((await host.runtime.listEvents(second.runId)).map((event) => event.type)).toContain("approval.denied");
      expect((await host.runtime.listEvents(first.runId)).map((event) => event.type)).toContain("approval.granted");
    } finally {
      await page.close();
    }
  }, 60_000);

  it("shows every question of two subagents and answers each by its callId and runId", async () => {
    const host = await startHost(bundle, { agentHarness: harness });
    const { runId, first, second } = await twoQuestions(host);
    const page = await browser().newPage();
    try {
      const sent: unknown[] = [];
      page.on("request", (request) => {
        if (request.url().endsWith("/answer")) sent.push(request.postDataJSON());
      });
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(runId)}`);
      const regionOf = (question: { runId: string }) => page.getByRole("region", { name: `Question waiting for an answer (subagent asker, run ${question.runId})` });
      await regionOf(first).waitFor();
      await regionOf(second).waitFor();
      await regionOf(second).getByLabel("Answer").fill("blue");
      await regionOf(second).getByRole("button", { name: "Answer" }).click();
      await regionOf(second).waitFor({ state: "detached", timeout: 15_000 });
      await regionOf(first).getByLabel("Answer").fill("red");
      await regionOf(first).getByRole("button", { name: "Answer" }).click();
      await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 15_000 });
      expect(sent).toEqual([
        { answer: "blue", callId: second.callId, runId: second.runId, actor: "inspector" },
        { answer: "red", callId: first.callId, runId: first.runId, actor: "inspector" },
      ]);
    } finally {
      await page.close();
    }
  }, 60_000);
});
