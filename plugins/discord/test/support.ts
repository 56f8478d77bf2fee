import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";

const FIXTURE_AGENT = resolve(import.meta.dirname, "fixtures/discord-agent");

/**
 * Copy the fixture agent next to the package (so `@assemblyline-agents/discord`
 * resolves from it) and build it there; the caller removes the folder.
 */
export async function buildFixtureAgent(): Promise<{ bundle: RuntimeBundle; dir: string }> {
  const dir = mkdtempSync(join(resolve(import.meta.dirname, ".."), ".test-agent-"));
  const agentDir = join(dir, "agent");
  cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
  const { artifactRoot } = await buildAgent(agentDir);
  return { bundle: await loadRuntimeBundle(artifactRoot), dir };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface LogEntry {
  level: string;
  fields: Record<string, unknown>;
}

export function captureLogger(): RuntimeLogger & { entries: LogEntry[]; events(name: string): LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: string) => (fields: Record<string, unknown>) => void entries.push({ level, fields });
  return { entries, events: (name) => entries.filter((entry) => entry.fields.event === name), debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}
