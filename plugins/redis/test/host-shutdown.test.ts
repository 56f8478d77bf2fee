import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { redisUnreachable, redisUrl } from "./support/redis.js";
import { describe, expect, it, onTestFinished } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";

const url = redisUrl;
const hostScript = resolve(import.meta.dirname, "fixtures/host-with-store.mjs");
/** Far past a shutdown's few hundred milliseconds: a process still running then is held open. */
const HELD_OPEN_AFTER_MS = 30_000;
const unreachable = await redisUnreachable("the Redis host shutdown test");

describe.skipIf(unreachable !== undefined)("a host given a Redis rate-limiter store, as the README shows it", () => {
  it("leaves the store open at shutdown, and the process ends on its own once the store's maker closes it", async () => {
    const agentDir = mkdtempSync(join(tmpdir(), "al-redis-shutdown-"));
    onTestFinished(() => rmSync(agentDir, { recursive: true, force: true }));
    mkdirSync(join(agentDir, "channels"));
    writeFileSync(join(agentDir, "agent.ts"), 'import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "redis-agent", model: "scripted:unused" });\n');
    writeFileSync(join(agentDir, "channels/message.ts"), 'import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message" });\n');
    const { artifactRoot } = await buildAgent(agentDir);
    const keyPrefix = `al:test:${randomUUID()}:`;
    onTestFinished(async () => {
      const admin = new Redis(url);
      const keys = await admin.keys(`${keyPrefix}*`);
      if (keys.length > 0) await admin.del(...keys);
      await admin.quit();
    });

    const child = spawn(process.execPath, [hostScript, artifactRoot, url, keyPrefix], { stdio: ["ignore", "pipe", "pipe"] });
    onTestFinished(() => void child.kill("SIGKILL"));
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const ended = await new Promise<string>((resolveEnd) => {
      const held = setTimeout(() => resolveEnd(`still running ${HELD_OPEN_AFTER_MS} ms after its host shut down`), HELD_OPEN_AFTER_MS);
      child.on("exit", (code, signal) => {
        clearTimeout(held);
        resolveEnd(`exited with ${signal ?? code}`);
      });
    });
    expect(ended, out).toBe("exited with 0");
    expect(out).toContain("store open after shutdown");
  });
});
