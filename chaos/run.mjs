#!/usr/bin/env node
// `npm run chaos`: kill, freeze and restart real processes under load, then count
// lost runs, duplicate completions and duplicate side effects from a ledger kept
// outside the state store. Prints the figures; exits 1 on any loss or duplicate.
//
//   CHAOS_ONLY=cli|replicas|restart   run one scenario
//   CHAOS_CLI_SECONDS (default 90), CHAOS_CLI_ITERATIONS (default 40)
//   CHAOS_RUNS (default 60 per replica scenario)
//   CHAOS_KEEP=1                      keep the work folder (ledgers, replica logs)
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildAgent } from "@assemblyline-agents/runtime";
import { startPrivatePostgres } from "./lib/private-postgres.mjs";
import { runsMidCall } from "./lib/ledger.mjs";
import { stopAll, waitFor } from "./lib/processes.mjs";
import { cliKills } from "./scenarios/cli-kills.mjs";
import { replicaLoad } from "./scenarios/replicas.mjs";

const here = import.meta.dirname;
const agentSource = join(here, "agent");
const bin = join(here, "../plugins/node/bin/assembly-line.js");
const only = process.env.CHAOS_ONLY;
const runsPerScenario = Number(process.env.CHAOS_RUNS ?? "60");
const work = mkdtempSync(join(tmpdir(), "al-chaos-"));
const log = (line) => process.stdout.write(`${line}\n`);
const results = [];
const begun = Date.now();
let postgres;

process.on("SIGINT", () => {
  stopAll();
  postgres?.stop();
  process.exit(130);
});

function report(name, result) {
  results.push({ name, ...result });
  log(`${result.failed ? "FAIL" : "ok  "} ${name}`);
  for (const [key, value] of Object.entries(result.figures)) log(`     ${key.padEnd(26)} ${value}`);
  for (const problem of result.problems.slice(0, 20)) log(`     ! ${problem}`);
  if (result.problems.length > 20) log(`     ! ... ${result.problems.length - 20} more`);
}

try {
  if (!only || only === "cli") {
    log("scenario 1: SIGKILL the assembly-line CLI at random moments, resume at once (file state)");
    const budgetMs = Number(process.env.CHAOS_CLI_SECONDS ?? "90") * 1_000;
    report("cli kills + resume", await cliKills({ work: join(work, "cli"), agentSource, bin, budgetMs, maxIterations: Number(process.env.CHAOS_CLI_ITERATIONS ?? "40"), log }));
  }
  if (!only || only === "replicas" || only === "restart") {
    log("starting a private PostgreSQL cluster");
    postgres = await startPrivatePostgres();
    const agentDir = join(work, "pg-agent");
    cpSync(agentSource, agentDir, { recursive: true });
    const { artifactRoot } = await buildAgent(agentDir);
    const common = { artifactRoot, script: join(agentDir, "script.json"), postgres, runs: runsPerScenario, spacingMs: 200, log };
    if (!only || only === "replicas") {
      log("scenario 2: three Node host replicas on PostgreSQL; one SIGKILLed (and replaced), one SIGSTOPped past its lease and woken after the others finished");
      const ledger = join(work, "replicas", "ledger.log");
      let frozenRuns = [];
      report(
        "replicas: kill + freeze",
        await replicaLoad({
          ...common,
          work: join(work, "replicas"),
          schema: "chaos_replicas",
          required: ["kills", "stops", "frozenMidCall", "wokenAfterTakeover", "replicaRestarts"],
          faults: [
            { atMs: 3_000, name: "SIGKILL replica a", act: (replicas, figures) => ((replicas[0].dead = true), replicas[0].child.kill("SIGKILL"), (figures.kills += 1)) },
            // Its replacement boots while b is frozen: it must take only what is provably free.
            { atMs: 8_000, name: "start replica a2 in a's place", act: async (_replicas, figures, control) => (await control.restart(0, "a2"), (figures.replicaRestarts += 1)) },
            {
              atMs: 5_000,
              name: "SIGSTOP replica b mid tool call",
              act: async (replicas, figures) => {
                // Freeze it while it is inside a tool call, so that waking it is the zombie case.
                await waitFor(() => (runsMidCall(ledger, "b").length > 0 ? true : undefined), 10_000, 5);
                replicas[1].child.kill("SIGSTOP");
                figures.stops += 1;
                // Read once it is frozen: the calls it is really stuck inside, not the ones it was in a moment ago.
                frozenRuns = runsMidCall(ledger, "b");
                figures.frozenMidCall = frozenRuns.length;
              },
            },
            {
              // Timed from the stop, well past its 2 s lease; woken only once the others have finished every run it was frozen inside.
              after: "SIGSTOP replica b mid tool call",
              atMs: 9_000,
              name: "SIGCONT replica b",
              act: async (replicas, figures, control) => {
                const left = await waitFor(async () => ((await control.unfinished(frozenRuns)) === 0 ? 0 : undefined), 30_000, 300);
                replicas[1].child.kill("SIGCONT");
                figures.wokenAfterTakeover = frozenRuns.length > 0 && left === 0 ? 1 : 0;
              },
            },
          ],
        }),
      );
    }
    if (!only || only === "restart") {
      log("scenario 3: three Node host replicas; PostgreSQL restarted twice mid-load (fast, then immediate)");
      report(
        "replicas: PostgreSQL restarts",
        await replicaLoad({
          ...common,
          work: join(work, "restart"),
          schema: "chaos_restart",
          required: ["restarts"],
          faults: [
            { atMs: 3_000, name: "pg_ctl restart -m fast", act: async (_replicas, figures) => ((figures.restarts += 1), await postgres.restart("fast")) },
            { atMs: 8_000, name: "pg_ctl restart -m immediate", act: async (_replicas, figures) => ((figures.restarts += 1), await postgres.restart("immediate")) },
          ],
        }),
      );
    }
  }
} catch (error) {
  results.push({ name: "suite", failed: true, figures: {}, problems: [String(error?.stack ?? error)] });
  log(`FAIL the suite could not finish: ${error?.stack ?? error}`);
} finally {
  stopAll();
  postgres?.stop();
  if (process.env.CHAOS_KEEP) log(`work folder kept: ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

const total = (key) => results.reduce((sum, result) => sum + (result.figures[key] ?? 0), 0);
log("");
log(
  `chaos: ${total("started")} runs started, ${total("completed")} completed, ${total("kills")} kills, ${total("stops")} freezes, ${total("restarts")} database restarts; ` +
    `lost ${total("lost")}, duplicate completions ${total("duplicateCompletions")}, duplicate side effects ${total("duplicateEffects")}, ` +
    `effects after completion ${total("effectsAfterCompletion")}, calls re-run after completion ${total("callsRerunAfterCompletion")}, writes after completion ${total("eventsAfterCompletion")}, seq gaps ${total("seqGaps")}; ${((Date.now() - begun) / 1000).toFixed(1)} s`,
);
process.exitCode = results.some((result) => result.failed) ? 1 : 0;
