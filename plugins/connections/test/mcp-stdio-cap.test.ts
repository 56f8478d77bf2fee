import { resolve as resolvePath } from "node:path";
import { describe, expect, it } from "vitest";
import { defineMcpConnection, type ConnectionPolicy } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const policy: ConnectionPolicy = { allowedHosts: [], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const server = defineMcpConnection({ command: process.execPath, args: [resolvePath(import.meta.dirname, "fixtures/sized-stdio-server.mjs")], description: "Sized" });
const LIMIT = 100 * 1024;

type TextResult = { content: Array<{ text: string }> };
const pidOf = (result: unknown) => (result as TextResult).content[0]!.text.split(" from ")[1];

describe("a stdio MCP server's answers", () => {
  it("answers a call whose answer passes the cap as too large, and starts the server again for the next call", async () => {
    const provider = createConnections({ maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
    try {
      const tools = provider.tools("sized", server, await provider.describe("sized", server, policy), policy);
      const before = pidOf(await tools.sized__text!.execute({ bytes: 10 }, callCtx()));
      const tooLarge = { code: "AL_ERR_CONNECTION_FAILED", error: expect.stringMatching(new RegExp(`sized tool text answered more than ${LIMIT} bytes .*maxResponseBytes`)) };
      expect(await tools.sized__text!.execute({ bytes: 20 * LIMIT }, callCtx())).toEqual(tooLarge);
      const after = pidOf(await tools.sized__text!.execute({ bytes: 10 }, callCtx()));
      expect(after).not.toBe(before);
    } finally {
      await provider.close?.();
    }
  }, 30_000);

  it("answers a call whose answer never ends at once as too large, and the calls in flight with it", async () => {
    // The call's timeout is far off: only the cap can end the call before it.
    const provider = createConnections({ maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
    try {
      const tools = provider.tools("sized", server, await provider.describe("sized", server, policy), policy);
      const startedAt = Date.now();
      const slow = tools.sized__slow!.execute({ word: "late", ms: 5_000 }, callCtx());
      const endless = tools.sized__endless!.execute({}, callCtx());
      const tooLarge = (tool: string) => ({ code: "AL_ERR_CONNECTION_FAILED", error: expect.stringMatching(new RegExp(`sized tool ${tool} answered more than ${LIMIT} bytes`)) });
      expect(await endless).toEqual(tooLarge("endless"));
      // One stream carries every answer: a call in flight on the stopped server ends with it.
      expect(await slow).toEqual(tooLarge("slow"));
      expect(Date.now() - startedAt).toBeLessThan(4_000);
      expect(await tools.sized__slow!.execute({ word: "next", ms: 0 }, callCtx())).toMatchObject({ content: [{ text: expect.stringMatching(/^next from \d+$/) }] });
    } finally {
      await provider.close?.();
    }
  }, 30_000);

  it("serves an answer above the SDK's 10 MB default when maxResponseBytes allows it", async () => {
    const provider = createConnections({ maxResponseBytes: 12 * 1024 * 1024, requestTimeoutMs: 60_000 });
    try {
      const tools = provider.tools("sized", server, await provider.describe("sized", server, policy), policy);
      const result = (await tools.sized__text!.execute({ bytes: 11 * 1024 * 1024 }, callCtx())) as TextResult;
      const text = result.content[0]!.text;
      expect(text.length).toBeGreaterThan(11 * 1024 * 1024);
      expect(text.slice(11 * 1024 * 1024 - 1)).toMatch(/^x from \d+$/);
    } finally {
      await provider.close?.();
    }
  }, 30_000);
});
