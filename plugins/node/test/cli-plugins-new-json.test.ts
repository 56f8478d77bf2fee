import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli/main.js";
import type { CommandIO } from "../src/cli/io.js";
import { tempDir } from "./support/host.js";

// docs/cli.md's --json table gives `plugins new` two data shapes: an adapter slot's, with the
// adapter's class and helper, and a conformance-kit subject's (channel, runtime, harness,
// telemetry-sink), with its kind and kit. A script reading the envelope relies on those keys.

async function pluginsNew(slot: string): Promise<Record<string, unknown>> {
  const out: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: () => {} };
  const dir = join(tempDir("al-plugins-new-json-"), "pkg");
  expect(await main(["plugins", "new", `acme-${slot}`, "--slot", slot, "--dir", dir, "--json"], io)).toBe(0);
  return JSON.parse(out.join("\n")).data as Record<string, unknown>;
}

describe("plugins new --json", () => {
  it("gives an adapter slot's package as { packageName, id, slot, contract, dir, className, helper, files }", async () => {
    expect(Object.keys(await pluginsNew("blob")).sort()).toEqual(["className", "contract", "dir", "files", "helper", "id", "packageName", "slot"]);
  });

  it.each([
    ["channel", "describeChannelConformance"],
    ["runtime", "describeRuntimeConformance"],
    ["harness", "describeHarnessConformance"],
    ["telemetry-sink", "describeTelemetrySinkConformance"],
  ])("gives --slot %s's package as { packageName, id, slot, kind, contract, kit, dir, files }", async (slot, kit) => {
    const data = await pluginsNew(slot);
    expect(Object.keys(data).sort()).toEqual(["contract", "dir", "files", "id", "kind", "kit", "packageName", "slot"]);
    expect({ kind: data.kind, kit: data.kit }).toEqual({ kind: slot, kit });
  });
});
