// Scenario 1: the installed `assembly-line` CLI on file state, SIGKILLed at random
// moments of `run`, then `resume`d at once (itself killed now and then) until the
// run is over. Every run that got into the store must complete once, its effect once.
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { audit } from "../lib/ledger.mjs";
import { runNode } from "../lib/processes.mjs";

/** Read every run (and its events) while no CLI process holds the folder. */
async function readStore(stateDir) {
  const state = await FileStateAdapter.open({ directory: stateDir });
  try {
    const runs = new Map();
    const { runs: page } = await state.listRuns({ limit: 10_000 });
    for (const run of page) runs.set(run.id, { status: run.status, message: run.input.message, events: await state.listEvents(run.id) });
    return runs;
  } finally {
    await state.close();
  }
}

export async function cliKills({ work, agentSource, bin, budgetMs, maxIterations, log }) {
  const agentDir = join(work, "agent");
  mkdirSync(work, { recursive: true });
  cpSync(agentSource, agentDir, { recursive: true });
  const stateDir = join(agentDir, ".assembly-line", "state");
  const script = join(agentDir, "script.json");
  const ledger = join(work, "ledger.log");
  const env = { ...process.env, CHAOS_LEDGER: ledger, CHAOS_TOOL_MS: "300", CHAOS_WHO: "cli", ASSEMBLY_LINE_LOG_LEVEL: "error", OPENAI_API_KEY: "" };
  const cli = (args, killAfterMs, afterOutput = false) => runNode([bin, ...args, "--json"], { env, killAfterMs, afterOutput });
  const figures = { iterations: 0, kills: 0, killedBeforeStart: 0, resumes: 0, errors: 0 };
  const errors = [];
  const started = new Set();
  const begun = Date.now();

  // An unkilled run first: it builds the agent and sets the scale of the kill delays.
  const reference = await cli(["run", agentDir, "--message", "job 0", "--model", `scripted:${script}`]);
  if (reference.code !== 0) throw new Error(`the reference run failed:\n${reference.stderr}`);
  const runMs = reference.ms;
  // With --json the CLI prints each event as it is recorded: from the first line on, the run exists.
  const liveMs = Math.max(50, reference.afterOutputMs);
  log(`  reference run: ${runMs} ms in all, ${liveMs} ms from its first event; most kills land in that window`);

  for (let iteration = 1; iteration <= maxIterations && Date.now() - begun < budgetMs; iteration++) {
    figures.iterations += 1;
    const message = `job ${iteration}`;
    // Most kills land while the run is live; some anywhere, start-up and build included.
    const inRun = Math.random() < 0.8;
    const first = await cli(["run", agentDir, "--message", message, "--model", `scripted:${script}`], Math.random() * (inRun ? liveMs : runMs), inRun);
    if (first.killed) figures.kills += 1;
    else if (first.code !== 0) {
      figures.errors += 1;
      errors.push(`run "${message}" exited ${first.code}: ${first.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      continue;
    }
    const runId = [...(await readStore(stateDir))].find(([, run]) => run.message === message)?.[0];
    if (!runId) {
      // Killed before the run was created: nothing was started, nothing can be lost.
      figures.killedBeforeStart += 1;
      continue;
    }
    started.add(runId);
    // Resume at once (no waiting for the dead process's lease), killing some resumes too.
    for (let attempt = 0; first.killed && attempt < 20; attempt++) {
      figures.resumes += 1;
      const killAfter = Math.random() < 0.35 ? Math.random() * liveMs : undefined;
      const resumed = await cli(["resume", runId, "--agent", agentDir], killAfter, true);
      if (resumed.killed) {
        figures.kills += 1;
        continue;
      }
      if (resumed.code !== 0) {
        figures.errors += 1;
        errors.push(`resume ${runId} exited ${resumed.code}: ${resumed.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      }
      break;
    }
  }
  const store = await readStore(stateDir);
  for (const [runId] of store) started.add(runId);
  const result = audit(ledger, started, store);
  // Runs that were never killed, or never resumed, prove nothing about kills and resumes.
  const unproven = ["kills", "resumes"].filter((name) => figures[name] === 0).map((name) => `fault did not happen: ${name} is 0`);
  return {
    figures: { ...figures, ...result.figures, elapsedMs: Date.now() - begun },
    problems: [...unproven, ...errors, ...result.problems],
    failed: result.failed || figures.errors > 0 || unproven.length > 0,
  };
}
