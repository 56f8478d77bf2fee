import { existsSync } from "node:fs";
import { ServerResponse, request } from "node:http";
import { connect } from "node:net";
import { queryObjects } from "node:v8";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import type { AgentHarness } from "@assemblyline-agents/core";
import type { ModelScript, RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, captureServer, fixtureBundle, routedHarness, SCRIPTS, startHost, waitFor } from "./support/host.js";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  // Outside CI a machine without Debian's chromium skips; in CI it must be there (.ci/run installs it).
  if (process.env.CI === "true") throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  console.warn(`skipping the run inspector browser security tests: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

const send = (url: string, message: string, conversationId?: string) =>
  call(`${url}/message?wait=10`, { body: { message, ...(conversationId ? { conversationId } : {}) } });

/** Every way a string has broken out of its place in a page: tags, attributes, URLs, script ends, line separators, controls. */
const HOSTILE = `</script><script>window.__pwned="script"</script>"><img src=x onerror="window.__pwned='img'">'><svg onload="window.__pwned='svg'"></svg> javascript:window.__pwned='url' \u2028\u2029 \u0000\u0007\u001b[31m </pre></textarea>`;

describe.skipIf(!haveChromium)("the inspector showing what strangers, models and tools wrote, in headless chromium", () => {
  it("shows every hostile string as text and runs none of it", async () => {
    const xss: ModelScript = { turns: [{ toolCalls: [{ name: `no_such_tool ${HOSTILE}`, input: {} }, { name: "publish", input: { body: HOSTILE } }] }, { text: HOSTILE }] };
    const host = await startHost(bundle, { agentHarness: routedHarness({ ...SCRIPTS, xss }) });
    const { runId, status } = (await send(host.url, `xss: ${HOSTILE}`, HOSTILE)).body;
    expect(status).toBe("waiting_approval");
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      const dialogs: string[] = [];
      page.on("dialog", (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(runId)}`);
      const pending = page.getByRole("region", { name: "Approval needed for publish" });
      await pending.waitFor();
      expect(await pending.locator("pre").textContent()).toContain("<img src=x onerror=");
      await pending.getByRole("button", { name: "Approve" }).click();
      await page.locator("#detail-title .badge", { hasText: "Completed" }).waitFor({ timeout: 15_000 });
      const shown = await page.locator("#detail-body").textContent();
      expect(shown).toContain(`xss: </script><script>window.__pwned="script"</script>`);
      expect(shown).toContain(`no_such_tool </script>`);
      // A run id that is itself hostile, from a link someone sent.
      await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(HOSTILE)}`);
      await page.locator("#detail-title", { hasText: "Run not found" }).waitFor();
      expect(await page.locator("#detail-body").textContent()).toContain("<svg onload=");
      expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).toBeUndefined();
      expect(await page.locator("img, svg, script:not([src])").count()).toBe(0);
      expect(dialogs).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe.skipIf(!haveChromium)("the inspector against other sites, in headless chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    // Two names another site could own, both pointing at this machine: what DNS rebinding gives an attacker.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--host-resolver-rules=MAP rebind.test 127.0.0.1, MAP attacker.test 127.0.0.1"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("does not let another site's page approve a paused run in dev mode (cross-site request forgery)", async () => {
    const host = await startHost(bundle);
    const { runId } = (await send(host.url, "approve: launch", "csrf")).body;
    const attacker = await captureServer(() => ({ status: 200, body: "<!doctype html><title>cat pictures</title>", headers: { "content-type": "text/html" } }));
    const page = await browser.newPage();
    try {
      await page.goto(attacker.url.replace("127.0.0.1", "attacker.test"));
      // A form-like request a page may send anywhere without asking: no body, no custom header.
      await page.evaluate(async (url) => {
        await fetch(url, { method: "POST", mode: "no-cors" }).catch(() => undefined);
      }, `${host.url}/runs/${runId}/approve`);
    } finally {
      await page.close();
    }
    const view = await call(`${host.url}/inspector/api/runs/${runId}`);
    expect(view.body.run.status).toBe("waiting_approval");
    expect(host.logger.events("security.cross_site_refused")).toHaveLength(1);
  }, 60_000);

  it("shows a dev host's runs only to pages addressed to it by loopback name or address (DNS rebinding)", async () => {
    const host = await startHost(bundle);
    const { runId } = (await send(host.url, "echo: my private notes", "rebinding")).body;
    const page = await browser.newPage();
    try {
      // The attacker's name now resolves to the dev host: to the browser, its page and the host share an origin.
      await page.goto(`http://rebind.test:${host.port}/inspector`);
      const stolen = await page.evaluate(async (id) => {
        const list = await fetch("/inspector/api/runs");
        const run = await fetch(`/inspector/api/runs/${encodeURIComponent(id)}`);
        return { listStatus: list.status, runStatus: run.status, list: await list.text(), run: await run.text() };
      }, runId);
      expect(stolen).toMatchObject({ listStatus: 403, runStatus: 403 });
      expect(stolen.list).not.toContain(runId);
      expect(stolen.run).not.toContain("private notes");

      // The same page, opened the way `assembly-line dev` prints it, works.
      await page.goto(`${host.url}/inspector`);
      await page.getByRole("link", { name: `Run ${runId}, Completed` }).waitFor();
    } finally {
      await page.close();
    }
  }, 60_000);
});

describe("inspector decisions from other sites", () => {
  it("refuses a decision whose Origin is another site when the browser sends no Sec-Fetch-Site, and takes the host's own", async () => {
    const host = await startHost(bundle);
    const { runId } = (await send(host.url, "approve: launch", "origin")).body;
    const forged = await call(`${host.url}/runs/${runId}/approve`, { method: "POST", headers: { origin: "http://attacker.test" } });
    expect(forged.status).toBe(403);
    expect(forged.body.error.code).toBe("AL_ERR_HOST_AUTH_REQUIRED");
    const own = await call(`${host.url}/runs/${runId}/approve`, { method: "POST", headers: { origin: host.url } });
    expect(own.status).toBe(200);
    expect(own.body.status).toBe("completed");
  });
});

describe("inspector live updates", () => {
  it("keeps nothing for a client that went away while its request was being authorized", async () => {
    // A host policy that takes a while (a session lookup): the client may be gone when the stream opens.
    const host = await startHost(bundle, {
      auth: {
        authorize: async () => {
          await new Promise((resolve) => setTimeout(resolve, 150));
          return true;
        },
      },
    });
    const streams = () => queryObjects(ServerResponse, { format: "count" }) as number;
    const before = streams();
    for (let index = 0; index < 20; index += 1) {
      const socket = connect(host.port, "127.0.0.1", () => socket.write(`GET /inspector/api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
      setTimeout(() => socket.destroy(), 20);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Every response the 20 abandoned streams had is collectable once they are gone.
    expect(streams() - before).toBeLessThan(5);
  });

  it("ends a stream authorized while the shutdown began, as it ends the open ones, instead of holding the drain to its timeout", async () => {
    // A host policy that takes a moment (a session lookup): the drain begins while it decides.
    let asked = false;
    const host = await startHost(bundle, {
      auth: {
        authorize: async () => {
          asked = true;
          await new Promise((resolve) => setTimeout(resolve, 300));
          return true;
        },
      },
    });
    let status = 0;
    const ended = new Promise<void>((resolve) => {
      const req = request(`${host.url}/inspector/api/stream`, { headers: { host: "127.0.0.1" } }, (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        // "close" too: a stream the host never ends is cut at the drain's deadline, without an end.
        res.on("end", resolve);
        res.on("close", resolve);
      });
      req.on("error", () => resolve());
      req.end();
    });
    await waitFor(() => asked || undefined);
    const started = Date.now();
    await host.shutdown({ timeoutMs: 4_000 });
    await ended;
    // An empty stream, ended: the page's client reconnects, to a host that is up.
    expect({ status, prompt: Date.now() - started < 2_000 }).toEqual({ status: 200, prompt: true });
  }, 20_000);

  it("drops the stream of a client that stops reading instead of buffering for it without end", async () => {
    const many = { turns: [{ toolCalls: Array.from({ length: 10_000 }, (_, index) => ({ name: "no_such_tool", input: { index } })) }, { text: "done" }] };
    const host = await startHost(bundle, { agentHarness: routedHarness({ ...SCRIPTS, many }), budgets: { maxToolCalls: 20_000 } });
    const stalled = connect(host.port, "127.0.0.1", () => stalled.write(`GET /inspector/api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    stalled.pause();
    const ended = new Promise<void>((resolve) => stalled.once("end", resolve));
    try {
      // Each run records some 10 000 events, each a message on the stream nobody reads.
      for (let round = 0; round < 4; round += 1) await call(`${host.url}/message?wait=60`, { body: { message: "many: go" } });
      // Read what the host had sent: a dropped stream then ends; one still held open does not.
      stalled.resume();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("the stalled stream was never dropped")), 5_000)));
      await Promise.race([ended, late]).finally(() => clearTimeout(timer));
    } finally {
      stalled.destroy();
    }
  }, 120_000);
});

describe("inspector data", () => {
  it("answers a run of over 10 000 events with its newest 500 and the count, and cuts a huge error", async () => {
    const many = { turns: [{ toolCalls: Array.from({ length: 10_000 }, (_, index) => ({ name: "no_such_tool", input: { index } })) }, { text: "done" }] };
    const huge: AgentHarness = {
      name: "scripted",
      runTurn: () => {
        throw new Error(`a provider answered ${"x".repeat(1_000_000)}`);
      },
    };
    const host = await startHost(bundle, { agentHarness: routedHarness({ ...SCRIPTS, many }), budgets: { maxToolCalls: 20_000 } });
    const { runId } = (await call(`${host.url}/message?wait=60`, { body: { message: "many: go" } })).body;
    const response = await fetch(`${host.url}/inspector/api/runs/${runId}`);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const text = await response.text();
    expect(text.length).toBeLessThan(1_000_000);
    const view = JSON.parse(text);
    expect(view.timelineTotal).toBeGreaterThan(10_000);
    expect(view.timeline).toHaveLength(500);
    expect(view.timeline.at(-1).type).toBe("run.completed");
    expect(view.toolCallsTotal).toBe(10_000);
    expect(view.toolCalls).toHaveLength(200);
    if (haveChromium) {
      // The page says it shows the newest part, not the whole run.
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const page = await browser.newPage();
        await page.goto(`${host.url}/inspector#/runs/${encodeURIComponent(runId)}`);
        await page.getByRole("heading", { name: `Timeline (newest 500 of ${view.timelineTotal} events)` }).waitFor({ timeout: 15_000 });
        await page.getByRole("heading", { name: "Tool calls (newest 200 of 10000 calls)" }).waitFor();
      } finally {
        await browser.close();
      }
    }

    const failing = await startHost(bundle, { agentHarness: huge });
    const failed = (await send(failing.url, "anything")).body;
    const failedView = (await call(`${failing.url}/inspector/api/runs/${failed.runId}`)).body;
    expect(failedView.run.status).toBe("failed");
    expect(failedView.run.error.message).toMatch(/^a provider answered x+…\[truncated \d+ chars\]$/);
    expect(failedView.run.error.message.length).toBeLessThan(5_000);
  }, 120_000);

  it("shows an error's code and a question's call id under captureContent usage, never their text", async () => {
    const leaky: AgentHarness = {
      name: "scripted",
      runTurn: () => {
        throw new Error("the provider refused the key sk-live-123 for alice@example.com");
      },
    };
    const usage = { instrumentation: { captureContent: "usage" as const } };
    const failing = await startHost(bundle, { agentHarness: leaky, ...usage });
    const failed = (await send(failing.url, "anything")).body;
    const failedView = (await call(`${failing.url}/inspector/api/runs/${failed.runId}`)).body;
    expect(failedView.run.status).toBe("failed");
    const stored = (await failing.runtime.state.runs.getRun(failed.runId))!.error!;
    expect(stored.message).toContain("sk-live-123");
    // Everything the run's error says but its message (its code, when it has one).
    expect(failedView.run.error).toEqual({ ...stored, message: null });
    expect(JSON.stringify(failedView)).not.toContain("sk-live-123");

    const asking = await startHost(bundle, usage);
    const asked = (await send(asking.url, "ask: colour")).body;
    const askedView = (await call(`${asking.url}/inspector/api/runs/${asked.runId}`)).body;
    const withheld = { callId: asked.question.callId, runId: null, subagent: null, toolName: "ask_question", question: null };
    expect(askedView.question).toEqual(withheld);
    expect(askedView.questions).toEqual([withheld]);
    expect(JSON.stringify(askedView)).not.toContain("Which colour?");
    // Withheld, not lost: the run asks it still, and the operator can answer it.
    expect((await call(`${asking.url}/runs/${asked.runId}/answer`, { body: { answer: "green", callId: asked.question.callId } })).body.status).toBe("completed");
  });

  it("shows a run paused on its budget with the budget, what it used and its limit", async () => {
    const host = await startHost(bundle, { budgets: { maxTurns: 1, onExceeded: "pause" } });
    const { runId, status } = (await send(host.url, "slow: two turns")).body;
    expect(status).toBe("waiting_approval");
    const view = (await call(`${host.url}/inspector/api/runs/${runId}`)).body;
    expect(view.pendingBudget).toEqual({ budget: "maxTurns", used: expect.any(Number), limit: 1 });
    expect(view.pendingBudgets).toEqual([{ ...view.pendingBudget, runId: null, subagent: null }]);
    expect(view.pendingApprovals).toEqual([]);
    expect(view.question).toBeNull();
  });

  it("serves the page with a policy that keeps out other origins' scripts, frames, bases and form targets", async () => {
    const host = await startHost(bundle);
    const page = await fetch(`${host.url}/inspector`);
    const csp = page.headers.get("content-security-policy") ?? "";
    for (const directive of ["script-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"]) expect(csp).toContain(directive);
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const list = await fetch(`${host.url}/inspector/api/runs`);
    expect(list.headers.get("cache-control")).toBe("no-store");
  });
});
