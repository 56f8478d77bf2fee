import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOtlpReceiver } from "../plugins/otlp/test/support/otlp-receiver.js";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
// Inside the repository, so the folder's `@assemblyline-agents/otlp` import resolves as in a project.
mkdirSync(join(root, "test/.agents"), { recursive: true });
const workDir = mkdtempSync(join(root, "test/.agents", "cli-telemetry-"));
const example = join(workDir, "notes-agent");
cpSync(join(root, "examples/notes-agent"), example, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
const script = join(example, "conversations/remember-milk.json");
writeFileSync(
  join(example, "instrumentation.ts"),
  `import { defineInstrumentation } from "@assemblyline-agents/core";
import { createOtlpSinkFromEnv } from "@assemblyline-agents/otlp";

export default defineInstrumentation({
  serviceName: "learning-agent",
  captureContent: "usage",
  setup: ({ env }) => createOtlpSinkFromEnv(env)
});
`,
);

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver?.close();
  rmSync(workDir, { recursive: true, force: true });
});

async function cli(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

describe("instrumentation.ts under the CLI", () => {
  it("`run` pauses and `approve` finishes in another process: the receiver gets one trace, each piece of work once", async () => {
    const paused = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`, "--json"]);
    expect(paused.code).toBe(3);
    const result = JSON.parse(paused.stdout).data.result;
    expect(result.status).toBe("waiting_approval");
    // The first process flushed its sink before exiting.
    expect(receiver.spans().map((span) => span.name).sort()).toEqual(["chat remember-milk.json", "step harness:model:0"]);
    expect(JSON.stringify(receiver.spans())).not.toContain(workDir);

    const approved = await cli(["approve", result.runId, "--agent", example]);
    expect(approved.code).toBe(0);
    expect(receiver.failures).toEqual([]);
    const spans = receiver.spans();
    const ids = spans.map((span) => span.spanId);
    expect(new Set(ids).size).toBe(ids.length);
    const root = spans.find((span) => span.name === "invoke_agent Notes")!;
    expect(root, JSON.stringify(spans.map((span) => span.name))).toBeDefined();
    expect(root.resource["service.name"]).toBe("learning-agent");
    expect(spans.filter((span) => span !== root).every((span) => span.parentSpanId === root.spanId && span.traceId === root.traceId)).toBe(true);
    expect(spans.filter((span) => span.name === "execute_tool record_note")).toHaveLength(1);
    expect(spans.filter((span) => span.name.startsWith("chat "))).toHaveLength(3);
    expect(JSON.stringify(spans)).not.toContain("Buy milk");
  });

  it("a setup that throws stops the command with AL_ERR_INSTRUMENTATION_SETUP", async () => {
    const failed = await cli(["run", example, "--message", "hi", "--model", `scripted:${script}`], { OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/AL_ERR_INSTRUMENTATION_SETUP: instrumentation\.ts: setup\(\) threw at startup: AL_ERR_OTLP_CONFIG: OTLP endpoint \(not quoted: .*\) is not a URL: it has no http:\/\/ or https:\/\/ scheme \(OTEL_EXPORTER_OTLP_ENDPOINT\)/);
  });
});
