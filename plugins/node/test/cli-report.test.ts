import { describe, expect, it } from "vitest";
import type { RunResult } from "@assemblyline-agents/runtime";
import { EXIT } from "../src/cli/exit-codes.js";
import type { CommandIO } from "../src/cli/io.js";
import { reportResult } from "../src/cli/report.js";

function report(result: RunResult): { code: number; out: string } {
  const out: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: () => undefined };
  const code = reportResult(result, io, { json: false, agentDir: "/agents/notes" });
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
