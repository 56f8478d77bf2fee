import type { JsonValue, RunEvent } from "@assemblyline-agents/core";
import type { RunResult } from "@assemblyline-agents/runtime";
import { commandLineOption, type ParsedCommand } from "./args.js";
import { EXIT } from "./exit-codes.js";
import type { CommandIO } from "./io.js";
import { colors, envelope } from "./output.js";
import { pendingChangeLines } from "./pending-change.js";

/** The exit code a run's status stands for (docs/cli.md). */
export function exitCodeOf(result: RunResult): number {
  switch (result.status) {
    case "completed":
      return EXIT.ok;
    case "failed":
      return EXIT.failed;
    case "waiting_approval":
    case "waiting_input":
      return EXIT.paused;
    default:
      return EXIT.unfinished;
  }
}

export interface ReportOptions {
  json: boolean;
  agentDir: string;
  /** The --state-dir the command line gave (commandLineOption): the commands printed to continue the run name it, or they would look for the run elsewhere. */
  stateDir?: string | undefined;
  /** The --base-url and --api the command line gave: the run's model is served there, and a continuing command without them would call the catalog's server instead. */
  baseUrl?: string | undefined;
  api?: string | undefined;
  events?: RunEvent[];
}

/** What the command line gave that the commands printed to continue a run must repeat (what the config filled, it fills again). */
export function continuedWith(parsed: ParsedCommand): Pick<ReportOptions, "stateDir" | "baseUrl" | "api"> {
  return { stateDir: commandLineOption(parsed, "state-dir"), baseUrl: commandLineOption(parsed, "base-url"), api: commandLineOption(parsed, "api") };
}

/** The flags that make a printed command find the run (--agent, --state-dir) and reach the server its model is served from (--base-url, --api). */
export function runAtFlags(options: Pick<ReportOptions, "agentDir" | "stateDir" | "baseUrl" | "api">): string {
  const flags: Array<[string, string | undefined]> = [["--agent", options.agentDir], ["--state-dir", options.stateDir], ["--base-url", options.baseUrl], ["--api", options.api]];
  return flags.flatMap(([flag, value]) => (value !== undefined ? [`${flag} ${JSON.stringify(value)}`] : [])).join(" ");
}

/**
 * How the command line ends: the reply, the failure, or what the paused run waits for and how to continue it.
 * With --json: one envelope, `data: { result, events }` (events: those this command saw, when it printed them).
 */
export function reportResult(result: RunResult, io: CommandIO, options: ReportOptions): number {
  if (options.json) {
    io.out(envelope({ result, ...(options.events ? { events: options.events } : {}) }));
    return exitCodeOf(result);
  }
  // Where the printed commands find the run (the agent, the state folder) and its model's server, when the command line named them.
  const runAt = runAtFlags(options);
  const paint = colors(io, "out");
  switch (result.status) {
    case "completed":
      io.out(`\n${result.response?.text ?? ""}`);
      break;
    case "failed":
      io.err(`\n${colors(io, "err").red(`run ${result.runId} failed`)}: ${result.error?.message ?? "unknown error"}`);
      break;
    case "waiting_approval":
    case "waiting_input":
      // A run paused on several subagents at once can wait for approvals and answers together, whatever its status.
      reportWaiting(result, io, paint, runAt);
      break;
    default:
      io.out(`\nrun ${result.runId} is ${result.status}; continue it with: npx assembly-line resume ${result.runId} ${runAt}`);
  }
  return exitCodeOf(result);
}

/** What a paused run waits for, each with the command that continues it. */
function reportWaiting(result: RunResult, io: CommandIO, paint: ReturnType<typeof colors>, runAt: string): void {
  if (result.pendingBudget) {
    const { budget, limit, used } = result.pendingBudget;
    // A parent paused on its subagent's budget: the budget is the subagent's, the decision the parent's.
    const child = result.waitingOn;
    io.out(
      child
        ? `\n${paint.yellow(`subagent ${child.subagent} (run ${child.runId}) reached its ${budget} budget`)} (${used} of ${limit}); run ${result.runId} waits for a decision`
        : `\n${paint.yellow(`run ${result.runId} reached its ${budget} budget`)} (${used} of ${limit}) and waits for a decision`,
    );
    io.out(`  extend:  npx assembly-line approve ${result.runId} ${runAt}`);
    io.out(`  stop:    npx assembly-line deny ${result.runId} ${runAt}`);
  }
  // The budgets of the other subagent runs it waits on: decided on those runs, as a decision without a call id on this one goes to the first.
  for (const other of result.waitingOnAll?.slice(1) ?? []) {
    if (!other.pendingBudget) continue;
    const { budget, limit, used } = other.pendingBudget;
    io.out(`\n${paint.yellow(`subagent ${other.subagent} (run ${other.runId}) reached its ${budget} budget`)} (${used} of ${limit}); run ${result.runId} waits for a decision`);
    io.out(`  extend:  npx assembly-line approve ${other.runId} ${runAt}`);
    io.out(`  stop:    npx assembly-line deny ${other.runId} ${runAt}`);
  }
  const approvals = result.pendingApprovals ?? [];
  for (const pending of approvals) {
    const origin = pending.subagent ? ` in subagent ${pending.subagent} (run ${pending.runId})` : "";
    // Two subagents' calls can share a call id; the approval id names one call of one run.
    const id = approvals.some((other) => other !== pending && other.callId === pending.callId) && pending.approvalId ? pending.approvalId : pending.callId;
    io.out(`\n${paint.yellow(`run ${result.runId} waits for approval`)} of ${pending.toolName} ${JSON.stringify(pending.input)} (call ${pending.callId})${origin}`);
    for (const line of pendingChangeLines(pending)) io.out(line);
    io.out(`  approve: npx assembly-line approve ${result.runId} ${id} ${runAt}`);
    io.out(`  deny:    npx assembly-line deny ${result.runId} ${id} ${runAt}`);
  }
  const questions = result.questions ?? (result.question ? [result.question] : []);
  if (questions.length <= 1 && result.status === "waiting_input") {
    const question = questions[0];
    io.out(`\n${paint.yellow(`run ${result.runId} asks:`)} ${askedText(question?.question ?? null)}${question?.subagent ? ` (from subagent ${question.subagent}, run ${question.runId})` : ""}`);
    io.out(`  answer: npx assembly-line answer ${result.runId} "..." ${runAt}`);
    return;
  }
  for (const question of questions) {
    io.out(`\n${paint.yellow(`run ${result.runId} asks:`)} ${askedText(question.question)}${question.subagent ? ` (from subagent ${question.subagent}, run ${question.runId})` : ""}`);
    // Two subagents' questions can share a call id: then the answer goes to the subagent's run itself, which wakes this one once it ends.
    const shared = questions.some((other) => other !== question && other.callId === question.callId);
    io.out(`  answer: npx assembly-line answer ${shared && question.runId ? question.runId : result.runId} "..." --call ${question.callId} ${runAt}`);
  }
}

/** A pending question as a person reads it: its text, and its choices when it offers some (the record is `{ question, choices, metadata }`). */
function askedText(asked: JsonValue): string {
  if (typeof asked !== "object" || asked === null || Array.isArray(asked) || typeof asked.question !== "string") return JSON.stringify(asked);
  const choices = Array.isArray(asked.choices) && asked.choices.length > 0 ? ` (choices: ${asked.choices.map((choice) => JSON.stringify(choice)).join(", ")})` : "";
  return `${JSON.stringify(asked.question)}${choices}`;
}
