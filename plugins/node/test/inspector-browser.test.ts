import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { InMemoryStateAdapter, buildAgent, loadModelScript, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { listenNodeRuntime, type NodeRuntimeHandle } from "../src/index.js";
import { haveChromium, headlessChromium } from "./support/chromium.js";
import { call, fixtureBundle, startHost, tempDir } from "./support/host.js";

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");

async function notesHost(options: { devMode: boolean; bearerToken?: string }): Promise<NodeRuntimeHandle> {
  const agentDir = join(tempDir("al-inspector-"), "notes-agent");
  cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
  const { artifactRoot } = await buildAgent(agentDir);
  const script = loadModelScript(join(agentDir, "conversations/remember-milk.json"));
  return listenNodeRuntime({
    ...(await loadRuntimeBundle(artifactRoot)),
    state: new InMemoryStateAdapter(),
    agentHarness: scriptedHarness(script),
    port: 0,
    host: "127.0.0.1",
    devMode: options.devMode,
    logger: noopLogger(),
    env: {},
    ...(options.bearerToken ? { auth: { bearerToken: options.bearerToken } } : {}),
  });
}

describe.skipIf(!haveChromium)("run inspector in headless chromium", () => {
  const browser = headlessChromium();
  let host: NodeRuntimeHandle;
  let page: Page;

  beforeAll(async () => {
    host = await notesHost({ devMode: true });
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
  }, 60_000);
  afterAll(async () => {
    await host?.shutdown({ timeoutMs: 2_000 });
  });

  it("shows a paused run, approves it with the keyboard, and sees it complete", async () => {
    const sent = await call(`${host.url}/message?wait=30`, { body: { message: "Remember to buy milk", conversationId: "demo" } });
    expect(sent.body.status).toBe("waiting_approval");
    const runId: string = sent.body.runId;

    await page.goto(`${host.url}/inspector`);
    await page.getByLabel("Status").selectOption({ label: "Waiting for approval" });
    const link = page.getByRole("link", { name: `Run ${runId}, Waiting for approval` });
    await link.waitFor();
    await link.focus();
    await page.keyboard.press("Enter");

    const pending = page.getByRole("region", { name: "Approval needed for record_note" });
    await pending.waitFor();
    await expect.poll(() => pending.textContent()).toContain("Recording a note is a durable side effect.");
    // Dev mode without instrumentation.ts shows bodies as captureContent "content" does.
    expect(await pending.textContent()).toContain("Buy milk on the way home");
    expect(await page.locator("ol.timeline").textContent()).toContain("approval.requested");
    const shot = process.env.ASSEMBLY_LINE_SCREENSHOT ?? join(tempDir("al-shot-"), "run-inspector.png");
    mkdirSync(dirname(shot), { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });

    const approve = pending.getByRole("button", { name: "Approve" });
    await approve.focus();
    await page.keyboard.press("Enter");
    await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 30_000 });
    const timeline = await page.locator("ol.timeline").textContent();
    expect(timeline).toContain("approval.granted");
    expect(timeline).toContain("run.completed");
    expect(await page.getByRole("region", { name: "Approval needed for record_note" }).count()).toBe(0);
    expect(await page.locator("table").textContent()).toContain("lookup_notes");
    const stored = await call(`${host.url}/runs/${runId}`);
    expect(stored.body.run.status).toBe("completed");
  }, 60_000);

  it("updates live over server-sent events when a run starts elsewhere", async () => {
    await page.goto(`${host.url}/inspector`);
    await page.locator("#live.on").waitFor();
    const before = await page.locator("#run-list li").count();
    const sent = await call(`${host.url}/message?wait=30`, { body: { message: "Remember to buy milk", conversationId: "live" } });
    // No reload: the stream's event makes the page refetch the list.
    await page.getByRole("link", { name: `Run ${sent.body.runId}, Waiting for approval` }).waitFor({ timeout: 15_000 });
    expect(await page.locator("#run-list li").count()).toBe(before + 1);
  }, 60_000);

  it("refetches the open run's view for that run's events only; other runs' events reload the list", async () => {
    const watched: string = (await call(`${host.url}/message?wait=30`, { body: { message: "Remember to buy milk", conversationId: "watched" } })).body.runId;
    await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(watched)}`);
    await page.locator("#live.on").waitFor();
    await page.locator("#detail-title .badge", { hasText: "Waiting for approval" }).waitFor();
    const views: string[] = [];
    const lists: string[] = [];
    const seen = (request: { url(): string }) => {
      const path = new URL(request.url()).pathname;
      if (path === `/inspector/api/runs/${watched}`) views.push(path);
      else if (path === "/inspector/api/runs") lists.push(path);
    };
    page.on("request", seen);
    try {
      for (let i = 0; i < 3; i++) {
        const other: string = (await call(`${host.url}/message?wait=30`, { body: { message: "Remember to buy milk", conversationId: `busy-${i}` } })).body.runId;
        await page.getByRole("link", { name: `Run ${other}, Waiting for approval` }).waitFor({ timeout: 15_000 });
      }
      expect(lists.length).toBeGreaterThan(0);
      expect(views).toEqual([]);
      // The watched run's own events do refetch its view.
      expect((await call(`${host.url}/runs/${watched}/approve`, { body: {} })).status).toBe(200);
      await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 30_000 });
      expect(views.length).toBeGreaterThan(0);
    } finally {
      page.off("request", seen);
    }
  }, 60_000);
});

describe.skipIf(!haveChromium)("decisions from the run inspector page, in headless chromium", () => {
  const browser = headlessChromium();

  it("answers the question it shows by that question's call id", async () => {
    const host = await startHost(await fixtureBundle());
    const asked = await call(`${host.url}/message?wait=10`, { body: { message: "ask: colour" } });
    expect(asked.body.status).toBe("waiting_input");
    const page = await browser().newPage();
    try {
      const sent: unknown[] = [];
      page.on("request", (request) => {
        if (request.url().endsWith("/answer")) sent.push(request.postDataJSON());
      });
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(asked.body.runId)}`);
      const question = page.getByRole("region", { name: "Question waiting for an answer" });
      await question.getByLabel("Answer").fill("green");
      await question.getByRole("button", { name: "Answer" }).click();
      await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 15_000 });
      expect(sent).toEqual([{ answer: "green", callId: asked.body.question.callId, actor: "inspector" }]);
    } finally {
      await page.close();
    }
  }, 60_000);

  it("shows the automation change an approval would let through, beside the call's input", async () => {
    const agentDir = tempDir("al-inspector-change-");
    mkdirSync(join(agentDir, "tools"));
    writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: true } });\n`);
    writeFileSync(
      join(agentDir, "tools/schedule.ts"),
      `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "Schedules the digest.", inputSchema: { type: "object" }, defaultEnabled: true, async execute(input, ctx) { return await ctx.automationManager.create({ name: "digest", schedule: { cron: "0 8 * * *" }, message: "morning digest" }); } });\n`,
    );
    const bundle = await loadRuntimeBundle((await buildAgent(agentDir)).artifactRoot);
    const host = await startHost(bundle, { agentHarness: scriptedHarness({ turns: [{ toolCalls: [{ name: "schedule", input: {} }] }, { text: "scheduled" }] }) });
    const page = await browser().newPage();
    try {
      const paused = await host.runtime.run({ message: "schedule my digest" });
      expect(paused.status).toBe("waiting_approval");
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(paused.runId)}`);
      const pending = page.getByRole("region", { name: "Approval needed for schedule" });
      await pending.waitFor();
      const change = pending.locator("pre.change");
      await change.waitFor();
      expect(JSON.parse((await change.textContent())!)).toMatchObject({ action: "create", name: "digest", automation: { message: "morning digest" } });
    } finally {
      await page.close();
    }
  }, 60_000);

  it("extends a budget a run paused on with Approve, and fails another with Deny, naming no call", async () => {
    const host = await startHost(await fixtureBundle(), { budgets: { maxTurns: 1, onExceeded: "pause" } });
    const page = await browser().newPage();
    try {
      const sent: unknown[] = [];
      page.on("request", (request) => {
        if (/\/(approve|deny)$/.test(request.url())) sent.push(request.postDataJSON());
      });
      for (const [button, ends] of [["Approve (extend)", "Completed"], ["Deny (fail)", "Failed"]] as const) {
        const paused = await call(`${host.url}/message?wait=10`, { body: { message: "slow: two turns" } });
        expect(paused.body.status).toBe("waiting_approval");
        await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(paused.body.runId)}`);
        const pending = page.getByRole("region", { name: "Budget maxTurns reached" });
        await pending.waitFor();
        expect(await pending.getByRole("heading").textContent()).toBe(`Budget maxTurns reached (${paused.body.pendingBudget.used} of 1)`);
        await pending.getByRole("button", { name: button }).click();
        await page.locator("#detail-title .badge", { hasText: ends }).waitFor({ timeout: 15_000 });
      }
      expect(sent).toEqual([{ actor: "inspector" }, { actor: "inspector" }]);
    } finally {
      await page.close();
    }
  }, 60_000);

  it("says a question's text is withheld under captureContent usage, and still answers it", async () => {
    const host = await startHost(await fixtureBundle(), { instrumentation: { captureContent: "usage" } });
    const asked = await call(`${host.url}/message?wait=10`, { body: { message: "ask: colour" } });
    const page = await browser().newPage();
    try {
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(asked.body.runId)}`);
      const question = page.getByRole("region", { name: "Question waiting for an answer" });
      await question.waitFor();
      expect(await question.textContent()).toContain("The question's text is withheld under captureContent: usage.");
      expect(await page.locator("#detail-body").textContent()).not.toContain("Which colour?");
      await question.getByLabel("Answer").fill("green");
      await question.getByRole("button", { name: "Answer" }).click();
      await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 15_000 });
    } finally {
      await page.close();
    }
  }, 60_000);
});

describe("run inspector auth in production", () => {
  it("serves the page shell, but run data only with the host's bearer token", async () => {
    const host = await notesHost({ devMode: false, bearerToken: "inspector-token" });
    try {
      const shell = await fetch(`${host.url}/inspector`);
      expect(shell.status).toBe(200);
      expect(shell.headers.get("content-type")).toContain("text/html");
      const html = await shell.text();
      expect(html).toContain('<label for="status-filter">Status</label>');
      expect((await call(`${host.url}/inspector/api/runs`)).status).toBe(401);
      expect((await call(`${host.url}/inspector/api/stream`)).status).toBe(401);
      const authorized = await call(`${host.url}/inspector/api/runs`, { headers: { authorization: "Bearer inspector-token" } });
      expect(authorized.status).toBe(200);
      expect(authorized.body.runs).toEqual([]);
    } finally {
      await host.shutdown({ timeoutMs: 2_000 });
    }
  });

  it("hides bodies in production without instrumentation.ts (captureContent usage)", async () => {
    const host = await notesHost({ devMode: false, bearerToken: "t" });
    try {
      const headers = { authorization: "Bearer t" };
      const started = await host.runtime.run({ message: "Remember to buy milk" });
      const view = await call(`${host.url}/inspector/api/runs/${started.runId}`, { headers });
      expect(view.body.captureContent).toBe("usage");
      expect(view.body.pendingApprovals).toEqual([
        { approvalId: expect.any(String), callId: expect.any(String), runId: null, subagent: null, toolName: "record_note", input: null, reason: "Recording a note is a durable side effect.", change: null, skillWrite: null },
      ]);
      expect(JSON.stringify(view.body)).not.toContain("milk");
    } finally {
      await host.shutdown({ timeoutMs: 2_000 });
    }
  });
});
