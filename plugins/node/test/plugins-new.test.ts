import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { verifyPluginPackage } from "@assemblyline-agents/registry";
import { pluginsNewCommand } from "../src/cli/commands/plugins-new.js";

const root = resolve(import.meta.dirname, "../../..");
const tsc = join(root, "node_modules/.bin/tsc");
const folders: string[] = [];
afterAll(async () => {
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

/**
 * Scaffold into a folder inside this repository, so the package resolves
 * @assemblyline-agents/core, typescript and vitest from its node_modules as an
 * author's does after `npm install`; build it with tsc as `npm run build` does.
 */
async function scaffold(slot: string): Promise<{ dir: string; out: string[] }> {
  const parent = await mkdtemp(join(import.meta.dirname, ".scaffold-"));
  folders.push(parent);
  const dir = join(parent, slot);
  const out: string[] = [];
  const code = await pluginsNewCommand([`@acme/assembly-line-kit-${slot}`, "--slot", slot, "--id", `kit-${slot}`, "--dir", dir], { out: (line) => out.push(line), err: (line) => out.push(line) });
  expect(code).toBe(0);
  await promisify(execFile)(tsc, ["-p", "."], { cwd: dir });
  return { dir, out };
}

/** Each kind, the kit `verify` runs on it, and the file its stubs name. */
const KINDS = [
  { slot: "state", kit: "describeStateConformance", file: "src/state.ts" },
  { slot: "blob", kit: "describeBlobStoreConformance", file: "src/blob-store.ts" },
  { slot: "sandbox", kit: "describeSandboxConformance", file: "src/sandbox-adapter.ts" },
  { slot: "scheduler", kit: "describeSchedulerConformance", file: "src/scheduler.ts" },
  { slot: "deploy", kit: "describeDeployConformance", file: "src/deploy-target.ts" },
  { slot: "runtime", kit: "describeRuntimeConformance", file: "src/host.ts" },
  { slot: "harness", kit: "describeHarnessConformance", file: "src/harness.ts" },
  { slot: "channel", kit: "describeChannelConformance", file: "src/channel.ts" },
  { slot: "telemetry-sink", kit: "describeTelemetrySinkConformance", file: "src/sink.ts" },
];

describe("plugins new --slot <kind>: a skeleton that builds, whose kit fails clearly until it is written", () => {
  it.each(KINDS)("$slot: verify passes the loader's checks, runs $kit and names $file in its failures", async ({ slot, kit, file }) => {
    const { dir } = await scaffold(slot);
    const report = await verifyPluginPackage(dir, { testTimeoutMs: 20_000 });
    expect(report.steps.map((step) => [step.step, step.ok])).toEqual([
      ["manifest", true],
      ["kernel range", true],
      ["exports", true],
      ["options and live contracts", true],
    ]);
    expect(report.ok).toBe(false);
    expect(report.kits).toHaveLength(1);
    const [outcome] = report.kits;
    expect(outcome).toMatchObject({ kit });
    expect(outcome!.failed).toBeGreaterThan(0);
    expect(outcome!.failures.some((failure) => failure.message.includes(`is not implemented yet: write it in ${file}`))).toBe(true);
  }, 180_000);

  it("telemetry-sink: verify passes once the sink is written as the README says", async () => {
    const { dir, out } = await scaffold("telemetry-sink");
    expect(out.join("\n")).toContain("implement src/sink.ts");
    // Queue in export(), send in flush(): what the skeleton's doc comment asks for, to the skeleton's own backend.
    await writeFile(
      join(dir, "src/sink.ts"),
      `import type { TelemetrySink, TelemetrySpan } from "@assemblyline-agents/core";

export interface KitTelemetrySinkSinkOptions {
  endpoint?: string;
}

export function createKitTelemetrySinkSink(options: KitTelemetrySinkSinkOptions = {}): TelemetrySink & { shutdown(): Promise<void> } {
  let queue: object[] = [];
  const flush = async (): Promise<void> => {
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    const response = await fetch(options.endpoint ?? "http://127.0.0.1:4318/spans", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(batch) });
    if (!response.ok) throw new Error("the backend answered " + response.status);
  };
  return {
    export(span: TelemetrySpan): void {
      queue.push({
        traceId: span.traceId,
        spanId: span.spanId,
        ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
        name: span.name,
        startTimeMs: span.startTimeMs,
        endTimeMs: span.endTimeMs,
        status: span.status.code,
        attributes: structuredClone(span.attributes),
        resource: structuredClone(span.resource),
      });
    },
    flush,
    shutdown: flush,
  };
}
`,
    );
    await promisify(execFile)(tsc, ["-p", "."], { cwd: dir });
    const report = await verifyPluginPackage(dir);
    expect(report.kits.map((kit) => [kit.kit, kit.failed, kit.failures])).toEqual([["describeTelemetrySinkConformance", 0, []]]);
    expect(report.ok).toBe(true);
  }, 180_000);
});
