import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { sourceFileHash } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

/** A tool that reads a binary file of the agent's folder, as a model or an image would be read. */
const classifyTool = toolSource({
  upFront: true,
  imports: `import { readFile } from "node:fs/promises";`,
  execute: `const weights = await readFile(new URL("../data/weights.bin", import.meta.url));
    return { size: weights.length };`,
});

const revisionOf = async (dir: string) => (await loadRuntimeBundle((await buildAgent(dir)).artifactRoot)).manifest.agentRevision;

describe("a binary file the agent's code reads", () => {
  it("makes a new revision when any of its bytes change, also bytes that are not UTF-8", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/classify.ts": classifyTool });
    mkdirSync(join(dir, "data"));
    const weights = join(dir, "data/weights.bin");
    writeFileSync(weights, Buffer.from([0x00, 0xff, 0x10, 0x80, 0x0d, 0x0a]));
    const first = await revisionOf(dir);
    // Read as text, 0xff and 0xfe are both U+FFFD: the change was invisible to the revision.
    writeFileSync(weights, Buffer.from([0x00, 0xfe, 0x10, 0x80, 0x0d, 0x0a]));
    const second = await revisionOf(dir);
    expect(second).not.toBe(first);
    // A CR LF pair in binary data is data, not a line ending.
    writeFileSync(weights, Buffer.from([0x00, 0xfe, 0x10, 0x80, 0x0a]));
    expect(await revisionOf(dir)).not.toBe(second);
    expect(readFileSync(weights)).toHaveLength(5);
  });

  it("leaves text hashed as before: line endings normalized, so a Windows checkout builds the same revision", () => {
    expect(sourceFileHash(Buffer.from("a\r\nb\n"))).toBe(sourceFileHash(Buffer.from("a\nb\n")));
    expect(sourceFileHash(Buffer.from("a\nb\n"))).not.toBe(sourceFileHash(Buffer.from("a\nc\n")));
    expect(sourceFileHash(Buffer.from([0xff]))).not.toBe(sourceFileHash(Buffer.from([0xfe])));
  });
});
