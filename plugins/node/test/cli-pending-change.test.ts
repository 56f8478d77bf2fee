import { describe, expect, it } from "vitest";
import type { PendingApproval, RunResult } from "@assemblyline-agents/runtime";
import type { CommandIO } from "../src/cli/io.js";
import { reportResult } from "../src/cli/report.js";

function printed(pending: PendingApproval): string[] {
  const out: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: () => undefined };
  const result: RunResult = { runId: "run_a", status: "waiting_approval", pendingApprovals: [pending] };
  reportResult(result, io, { json: false, agentDir: "/agents/notes" });
  return out.join("\n").split("\n");
}

const call = { approvalId: "apr_1", callId: "call_0_0", input: {} };

describe("a pending approval of a change, as the CLI prints it", () => {
  it("shows an automation change as compact JSON under the call, before the commands that decide it", () => {
    const lines = printed({ ...call, toolName: "schedule", change: { action: "create", name: "digest", automation: { name: "digest", schedule: { cron: "0 8 * * *" }, message: "morning digest" } } });
    const at = lines.findIndex((line) => line.startsWith("  change:"));
    expect(lines[at]).toBe('  change:  {"action":"create","name":"digest","automation":{"name":"digest","schedule":{"cron":"0 8 * * *"},"message":"morning digest"}}');
    expect(lines[at - 1]).toContain("waits for approval of schedule");
    expect(lines[at + 1]).toMatch(/^ {2}approve: /);
  });

  it("cuts a long change, saying how much was left out", () => {
    const message = "x".repeat(1_000);
    const [line] = printed({ ...call, toolName: "schedule", change: { action: "update", name: "digest", patch: { message } } }).filter((printedLine) => printedLine.startsWith("  change:"));
    expect(line!.length).toBeLessThan(320);
    expect(line).toMatch(/^ {2}change: {2}\{"action":"update","name":"digest","patch":\{"message":"x+… \(\d+ more characters\)$/);
  });

  it("shows a skill write as its action and file, with the first lines of the text it would write", () => {
    const text = "---\ndescription: Release.\n---\n1. Tag.\n2. Build.\n3. Publish.\n4. Announce.\n5. Rest.\n";
    const lines = printed({
      ...call,
      toolName: "learn",
      skillWrite: { name: "release", path: "SKILL.md", before: null, after: "sha256:b", binding: "d", proposed: { files: { "SKILL.md": text, "references/hosts.md": "web-1" }, removed: [], bytes: text.length + 5, truncated: false } },
    });
    const at = lines.indexOf("  skill:   create /skills/release/SKILL.md");
    expect(at).toBeGreaterThan(0);
    expect(lines.slice(at + 1, at + 9).map((line) => line.trim())).toEqual([
      "| ---",
      "| description: Release.",
      "| ---",
      "| 1. Tag.",
      "| 2. Build.",
      "| 3. Publish.",
      "… 2 more lines",
      "also writes: references/hosts.md",
    ]);
  });

  it("says a write deletes the file, and that the text its approver sees is cut", () => {
    const deleting = printed({ ...call, toolName: "learn", skillWrite: { name: "old", path: "notes.md", before: "sha256:a", after: null, binding: "d" } });
    expect(deleting).toContain("  skill:   delete /skills/old/notes.md");
    const cut = printed({ ...call, toolName: "learn", skillWrite: { name: "big", path: "SKILL.md", before: "sha256:a", after: "sha256:b", binding: "d", proposed: { files: { "SKILL.md": "Pay." }, removed: ["old.md"], bytes: 40_000, truncated: true } } });
    expect(cut).toContain("  skill:   change /skills/big/SKILL.md");
    expect(cut.map((line) => line.trim())).toEqual(expect.arrayContaining(["removes: old.md", "(the text shown for approval is cut: 40000 bytes in all)"]));
  });

  it("prints escape sequences in the proposed text as \\u escapes, never for the terminal to act on", () => {
    const lines = printed({ ...call, toolName: "learn", skillWrite: { name: "x", path: "SKILL.md", before: null, after: "sha256:b", binding: "d", proposed: { files: { "SKILL.md": "safe\u001b[2Jgone\u009b31m" }, removed: [], bytes: 20, truncated: false } } });
    const shown = lines.find((line) => line.includes("safe"))!;
    expect(shown.trim()).toBe("| safe\\u001b[2Jgone\\u009b31m");
    expect(lines.join("\n")).not.toMatch(/[\u001b\u009b]/);
  });

  it("adds nothing for a tool's own gate, which shows its input", () => {
    const lines = printed({ ...call, toolName: "record_note", input: { note: "milk" }, reason: "Recording a note is a durable side effect." });
    expect(lines.some((line) => line.startsWith("  change:") || line.startsWith("  skill:"))).toBe(false);
  });
});
