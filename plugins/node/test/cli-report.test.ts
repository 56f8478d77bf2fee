import { describe, expect, it } from "vitest";
import type { JsonValue } from "@assemblyline-agents/core";
import type { RunResult } from "@assemblyline-agents/runtime";
import { EXIT } from "../src/cli/exit-codes.js";
import type { CommandIO } from "../src/cli/io.js";
import { reportResult } from "../src/cli/report.js";

function report(result: RunResult, options: { stateDir?: string; baseUrl?: string; api?: string } = {}): { code: number; out: string } {
  const out: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: () => undefined };
  const code = reportResult(result, io, { json: false, agentDir: "/agents/notes", ...options });
  return { code, out: out.join("\n") };
}

describe("how a run paused on a budget is reported", () => {
  it("names the run whose budget ran out", () => {
    const { code, out } = report({ runId: "run_parent", status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 3, used: 3 } });
    expect(code).toBe(EXIT.paused);
    expect(out).toContain("run run_parent reached its maxTurns budget (3 of 3) and waits for a decision");
    expect(out).toContain('extend:  npx assembly-line approve run_parent --agent "/agents/notes"');
  });

  it("names the subagent run when the budget is its subagent's, and continues the parent", () => {
    const { out } = report({
      runId: "run_parent",
      status: "waiting_approval",
      pendingBudget: { budget: "maxTurns", limit: 2, used: 2 },
      waitingOn: { runId: "run_child", subagent: "researcher" },
    });
    expect(out).toContain("subagent researcher (run run_child) reached its maxTurns budget (2 of 2); run run_parent waits for a decision");
    expect(out).not.toContain("run run_parent reached its");
    // approve and deny on the parent decide the subagent's budget.
    expect(out).toContain('extend:  npx assembly-line approve run_parent --agent "/agents/notes"');
    expect(out).toContain('stop:    npx assembly-line deny run_parent --agent "/agents/notes"');
  });
});

describe("a pending question", () => {
  it("is printed as its text and its choices, as the run records it ({ question, choices, metadata }), not as the record's JSON", () => {
    const asked = (question: JsonValue) => report({ runId: "run_q", status: "waiting_input", question: { callId: "call_1", toolName: "ask_question", question } }).out.split("\n").find((line) => line.includes("asks:"));
    expect(asked({ question: "Which shop?", choices: null, metadata: null })).toMatch(/asks: "Which shop\?"$/);
    expect(asked({ question: "Which shop?", choices: ["corner", "market"], metadata: { urgent: true } })).toMatch(/asks: "Which shop\?" \(choices: "corner", "market"\)$/);
    // Anything else is shown as it is.
    expect(asked("Which shop?")).toMatch(/asks: "Which shop\?"$/);
  });
});

describe("the commands printed to continue a run kept in a --state-dir", () => {
  const stateDir = "/srv/agent state";
  const continuing = (out: string) => out.split("\n").filter((line) => line.includes("npx assembly-line"));

  it("name the --state-dir in every one of them, quoted as the agent folder is", () => {
    const lines = [
      ...continuing(report({ runId: "run_b", status: "waiting_approval", pendingBudget: { budget: "maxTurns", limit: 3, used: 3 } }, { stateDir }).out),
      ...continuing(report({ runId: "run_a", status: "waiting_approval", pendingApprovals: [{ approvalId: "apr_1", callId: "call_0_0", toolName: "record_note", input: {} }] }, { stateDir }).out),
      ...continuing(report({ runId: "run_q", status: "waiting_input", question: { callId: "call_1", toolName: "ask_question", question: "Which shop?" } }, { stateDir }).out),
      ...continuing(report({ runId: "run_r", status: "running" }, { stateDir }).out),
    ];
    expect(lines.map((line) => line.trim().split(":")[0])).toEqual(["extend", "stop", "approve", "deny", "answer", "run run_r is running; continue it with"]);
    for (const line of lines) expect(line).toMatch(/ --agent "\/agents\/notes" --state-dir "\/srv\/agent state"$/);
  });

  it("leave it out when none was given", () => {
    const { out } = report({ runId: "run_a", status: "waiting_approval", pendingApprovals: [{ approvalId: "apr_1", callId: "call_0_0", toolName: "record_note", input: {} }] });
    expect(out).toContain('  approve: npx assembly-line approve run_a call_0_0 --agent "/agents/notes"\n');
    expect(out).not.toContain("--state-dir");
  });

  it("name the --base-url and --api the run's model is served from, after the --state-dir", () => {
    const { out } = report(
      { runId: "run_q", status: "waiting_input", question: { callId: "call_1", toolName: "ask_question", question: "Which shop?" } },
      { stateDir, baseUrl: "http://127.0.0.1:11434/v1", api: "openai-completions" },
    );
    expect(out).toContain('  answer: npx assembly-line answer run_q "..." --agent "/agents/notes" --state-dir "/srv/agent state" --base-url "http://127.0.0.1:11434/v1" --api "openai-completions"');
  });
});

describe("a parent run whose subagents wait together", () => {
  const approval = (runId: string, approvalId: string) => ({ approvalId, callId: "call_0_0", toolName: "lookup", input: { value: "x" }, runId, subagent: "researcher" });
  const question = (runId: string, callId: string) => ({ callId, toolName: "ask", question: { question: `Which shop for ${runId}?`, choices: null, metadata: null }, runId, subagent: "asker" });

  it("prints each subagent's call, named by its approval id when two of them share a call id", () => {
    const { out } = report({
      runId: "run_parent",
      status: "waiting_approval",
      pendingApprovals: [approval("run_a", "appr_a"), approval("run_b", "appr_b")],
      waitingOn: { runId: "run_a", subagent: "researcher" },
      waitingOnAll: [
        { runId: "run_a", subagent: "researcher" },
        { runId: "run_b", subagent: "researcher" },
      ],
    });
    expect(out).toContain("(call call_0_0) in subagent researcher (run run_a)");
    expect(out).toContain("(call call_0_0) in subagent researcher (run run_b)");
    expect(out).toContain('  approve: npx assembly-line approve run_parent appr_a --agent "/agents/notes"');
    expect(out).toContain('  deny:    npx assembly-line deny run_parent appr_b --agent "/agents/notes"');
    expect(out).not.toContain("approve run_parent call_0_0");
  });

  it("prints every question with its call, answered in the subagent's run when two share a call id, and a question beside an approval", () => {
    const both = report({ runId: "run_parent", status: "waiting_input", question: question("run_a", "call_0_0"), questions: [question("run_a", "call_0_0"), question("run_b", "call_0_0")] }).out;
    expect(both).toContain('asks: "Which shop for run_a?" (from subagent asker, run run_a)');
    expect(both).toContain('  answer: npx assembly-line answer run_a "..." --call call_0_0 --agent "/agents/notes"');
    expect(both).toContain('  answer: npx assembly-line answer run_b "..." --call call_0_0 --agent "/agents/notes"');
    const distinct = report({ runId: "run_parent", status: "waiting_input", question: question("run_a", "call_1"), questions: [question("run_a", "call_1"), question("run_b", "call_2")] }).out;
    expect(distinct).toContain('  answer: npx assembly-line answer run_parent "..." --call call_2 --agent "/agents/notes"');
    const mixed = report({ runId: "run_parent", status: "waiting_approval", pendingApprovals: [approval("run_a", "appr_a")], question: question("run_b", "call_0_0"), questions: [question("run_b", "call_0_0")] }).out;
    expect(mixed).toContain('  approve: npx assembly-line approve run_parent call_0_0 --agent "/agents/notes"');
    expect(mixed).toContain('  answer: npx assembly-line answer run_parent "..." --call call_0_0 --agent "/agents/notes"');
  });
});
