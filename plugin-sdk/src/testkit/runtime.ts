import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AgentHarness, HarnessContext, HarnessTurnInput, HarnessTurnResult } from "../harness.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

/** A host the subject booted: its base URL and how to stop it. */
export interface RuntimeKitHost {
  /** e.g. http://127.0.0.1:40123 */
  url: string;
  /** Drain and stop; resolves once the listener is closed. */
  shutdown(): Promise<void>;
}

/**
 * A runtime plugin's host, booted the way its users boot it: build the agent
 * folder, serve it on 127.0.0.1 (any free port) with `harness` as the engine
 * for every model spec, dev mode (no auth on raw routes), state of its choice.
 */
export interface RuntimeKitSubject {
  start(options: { agentDir: string; harness: AgentHarness }): Promise<RuntimeKitHost>;
}

const AGENT_FILES: Record<string, string> = {
  "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "runtime-kit", model: "kit/scripted", instructions: "The runtime conformance kit's agent.", defaultTools: ["kit_echo"] });
`,
  "channels/kit.ts": `import { defineChannel } from "@assemblyline-agents/core";
export default defineChannel({ transport: "http", route: "/kit/message", methods: ["POST"] });
`,
  "tools/kit_echo.ts": `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Echo a value back.",
  inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"], additionalProperties: false },
  async execute(input) {
    return { echoed: input.value };
  },
});
`,
};

/** The kit's engine: answers "tool: <value>" through kit_echo and the pipeline, anything else by echoing it. */
function kitHarness(seen: HarnessTurnInput[]): AgentHarness {
  return {
    name: "runtime-kit",
    async runTurn(input: HarnessTurnInput, ctx: HarnessContext): Promise<HarnessTurnResult> {
      seen.push(input);
      const last = [...input.context.messages].reverse().find((message) => message.role === "user")?.content ?? "";
      const asked = /^tool: (.*)$/.exec(last);
      if (!asked) return { status: "completed", response: { text: `kit heard: ${last}` } };
      const outcome = await ctx.callTool({ id: "call_kit_echo", name: "kit_echo", input: { value: asked[1]! } });
      return { status: "completed", response: { text: outcome.status === "completed" ? `echo: ${JSON.stringify(outcome.output)}` : `tool ${outcome.status}` } };
    },
  };
}

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

/**
 * The runtime contract: a host boots an agent folder and answers /healthz and
 * /readyz; a message on a channel route starts a run that the engine turns
 * into an answer, with tool calls going through the pipeline, and `?wait=`
 * answers with the run once it rests; shutdown closes the listener.
 */
export function describeRuntimeConformance(name: string, factory: StateKitFactory<RuntimeKitSubject>, options: { timeoutMs?: number } = {}): void {
  const timeout = options.timeoutMs ?? 120_000;
  describe(`${name}: runtime conformance`, () => {
    const subject = useSubject(factory);

    /** One agent folder and one host per test; the host is stopped and the folder removed whatever happens. */
    async function withHost(test: (host: RuntimeKitHost, seen: HarnessTurnInput[]) => Promise<void>): Promise<void> {
      const agentDir = await mkdtemp(join(tmpdir(), "al-runtime-kit-"));
      let host: RuntimeKitHost | undefined;
      try {
        for (const [file, text] of Object.entries(AGENT_FILES)) {
          await mkdir(join(agentDir, file, ".."), { recursive: true });
          await writeFile(join(agentDir, file), text);
        }
        const seen: HarnessTurnInput[] = [];
        host = await subject().start({ agentDir, harness: kitHarness(seen) });
        await test(host, seen);
      } finally {
        await host?.shutdown();
        await rm(agentDir, { recursive: true, force: true });
      }
    }

    it("boots the agent and answers /healthz and /readyz", async () => {
      await withHost(async (host) => {
        expect(host.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
        expect((await fetch(`${host.url}/readyz`)).status).toBe(200);
      });
    }, timeout);

    it("starts a run from a channel message and answers with its result once it rests", async () => {
      await withHost(async (host, seen) => {
        const reply = await post(`${host.url}/kit/message?wait=30`, { message: "hello kit", conversationId: "kit-conversation" });
        expect(reply.status).toBe(200);
        expect(reply.body).toMatchObject({ status: "completed", response: { text: "kit heard: hello kit" } });
        expect(seen).toHaveLength(1);
        expect(seen[0]!.context.tools.map((tool) => tool.name)).toContain("kit_echo");
      });
    }, timeout);

    it("runs the engine's tool call through the agent's tool", async () => {
      await withHost(async (host) => {
        const reply = await post(`${host.url}/kit/message?wait=30`, { message: "tool: ping" });
        expect(reply.status).toBe(200);
        expect(reply.body).toMatchObject({ status: "completed", response: { text: `echo: ${JSON.stringify({ echoed: "ping" })}` } });
      });
    }, timeout);

    it("shuts down cleanly: shutdown resolves and the port stops answering", async () => {
      const agentDir = await mkdtemp(join(tmpdir(), "al-runtime-kit-"));
      try {
        for (const [file, text] of Object.entries(AGENT_FILES)) {
          await mkdir(join(agentDir, file, ".."), { recursive: true });
          await writeFile(join(agentDir, file), text);
        }
        const host = await subject().start({ agentDir, harness: kitHarness([]) });
        expect((await post(`${host.url}/kit/message?wait=30`, { message: "before shutdown" })).body).toMatchObject({ status: "completed" });
        await host.shutdown();
        await expect(fetch(`${host.url}/healthz`)).rejects.toThrow();
      } finally {
        await rm(agentDir, { recursive: true, force: true });
      }
    }, timeout);
  });
}
