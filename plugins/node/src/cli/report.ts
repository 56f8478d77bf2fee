import type { RunResult } from "@assemblyline-agents/runtime";
import type { CommandIO } from "./io.js";

/** How the command line ends: the reply, the failure, or what the paused run waits for and how to continue it. */
export function reportResult(result: RunResult, io: CommandIO, options: { json: boolean; agentDir: string }): number {
  if (options.json) {
    io.out(JSON.stringify({ result }));
    return result.status === "failed" ? 1 : 0;
  }
  const agent = JSON.stringify(options.agentDir);
  switch (result.status) {
    case "completed":
      io.out(`\n${result.response?.text ?? ""}`);
      return 0;
    case "failed":
      io.err(`\nrun ${result.runId} failed: ${result.error?.message ?? "unknown error"}`);
      return 1;
    case "waiting_approval":
      if (result.pendingBudget) {
        const { budget, limit, used } = result.pendingBudget;
        io.out(`\nrun ${result.runId} reached its ${budget} budget (${used} of ${limit}) and waits for a decision`);
        io.out(`  extend:  npx assembly-line approve ${result.runId} --agent ${agent}`);
        io.out(`  stop:    npx assembly-line deny ${result.runId} --agent ${agent}`);
      }
      for (const pending of result.pendingApprovals ?? []) {
        const origin = pending.subagent ? ` in subagent ${pending.subagent} (run ${pending.runId})` : "";
        io.out(`\nrun ${result.runId} waits for approval of ${pending.toolName} ${JSON.stringify(pending.input)} (call ${pending.callId})${origin}`);
        io.out(`  approve: npx assembly-line approve ${result.runId} ${pending.callId} --agent ${agent}`);
        io.out(`  deny:    npx assembly-line deny ${result.runId} ${pending.callId} --agent ${agent}`);
      }
      return 0;
    case "waiting_input":
      io.out(`\nrun ${result.runId} asks: ${JSON.stringify(result.question?.question ?? null)}${result.question?.subagent ? ` (from subagent ${result.question.subagent}, run ${result.question.runId})` : ""}`);
      io.out(`  answer: npx assembly-line answer ${result.runId} "..." --agent ${agent}`);
      return 0;
    default:
      io.out(`\nrun ${result.runId} is ${result.status}; continue it with: npx assembly-line resume ${result.runId} --agent ${agent}`);
      return 0;
  }
}
