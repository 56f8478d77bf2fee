import type { NormalizedSchedule } from "@assemblyline-agents/core";
import type { Automations } from "@assemblyline-agents/runtime";
import { builtAgentFolder } from "../agent-folder.js";
import { jsonOption, requirePositional, type ParsedCommand } from "../args.js";
import { commandLogger } from "../command-logger.js";
import type { CommandIO } from "../io.js";
import { catalogFor, chooseModel, openLocalRuntime, type ModelCatalogSource, type ModelFlags } from "../local-runtime.js";
import { checkModelSpec, modelFlagsOf } from "../model-flags.js";
import { envelope } from "../output.js";
import { continuedWith, reportResult } from "../report.js";
import { driveUntilSignal } from "../interrupt.js";
import { stateDirOption } from "../state-dir.js";
import { formatEvent } from "../timeline.js";

const USAGE = "assembly-line automations list | run <name> | pause <name> | resume <name>  [--agent <dir>] [--state-dir <dir>] [--json]";

/**
 * `automations list|run|pause|resume`: the agent's static (automations/) and
 * dynamic automations as the state store holds them. The built automations/
 * are never synced into the store (a host does that at start): on a store
 * shared with running hosts, this folder's build may differ from theirs, and
 * writing it would rewrite or delete their rows. `list` only reads (this
 * build's files with no row yet are shown apart); `pause` and `resume` change
 * only the named automation's pause; `run` starts one run of it as stored.
 */
export const automationsCommand = (sub: string) => async (parsed: ParsedCommand, io: CommandIO): Promise<number> => {
  const name = sub === "list" ? undefined : requirePositional(parsed.positionals, 0, "name", USAGE);
  const json = jsonOption(parsed);
  // Only `automations run` calls a model (the others do not take the model flags): it checks the one chosen here before starting a run.
  const flags: ModelFlags = sub === "run" ? modelFlagsOf(parsed) : {};
  if (flags.model !== undefined) await checkModelSpec(flags.model, await catalogFor(flags, undefined));
  // --base-url without --model serves agent.ts's model, which the build names.
  const local = await openAgent(parsed, io, sub === "run" && !json, (agentModel) => catalogFor(flags, agentModel));
  try {
    const { automations } = local.runtime;
    if (sub === "list") {
      // The rows as stored, and this build's files no host has written yet (`stored: false`), by name.
      const all = [...(await automations.list()).map((automation) => ({ ...automation, stored: true })), ...(await automations.notYetStored()).map((automation) => ({ ...automation, stored: false }))];
      all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      if (json) io.out(envelope({ automations: all }));
      else if (all.length === 0) io.out("no automations");
      else for (const automation of all) io.out(automation.stored ? describeLine(automation) : `${describeLine(automation)}  (not in the state store yet: a host writes automations/ at start)`);
      return 0;
    }
    if (sub === "pause" || sub === "resume") {
      const automation = await automations.setPaused(name!, sub === "pause");
      io.out(json ? envelope(automation) : describeLine(automation));
      return 0;
    }
    const model = (await chooseModel(local.bundle.manifest.agent.model, flags)).model;
    const { runId } = await automations.runNow(name!, model ? { model } : {});
    const { result } = await driveUntilSignal(local.runtime.start(runId), () => runId, local.runtime, io);
    return reportResult(result, io, { json, agentDir: local.agentDir, ...continuedWith(parsed) });
  } finally {
    await local.close();
  }
};

async function openAgent(parsed: ParsedCommand, io: CommandIO, printEvents: boolean, models: ModelCatalogSource) {
  const agentDir = builtAgentFolder(parsed, USAGE);
  const stateDir = stateDirOption(parsed, { mustExist: false, usage: USAGE });
  const logger = commandLogger(io, jsonOption(parsed));
  const local = await openLocalRuntime({
    agentDir,
    build: false,
    ...(stateDir ? { stateDir } : {}),
    models,
    ...(logger ? { logger } : {}),
    ...(printEvents ? { onEvent: (event) => io.out(formatEvent(event)) } : {}),
  });
  return { ...local, agentDir };
}

/** An automation as `runtime.automations` lists it: with `held`. */
type ListedAutomation = Awaited<ReturnType<Automations["list"]>>[number];

function describeLine(automation: ListedAutomation): string {
  const rests = automation.paused ? "paused" : !automation.enabled ? "disabled" : undefined;
  // A held automation's next due time passes without a run: printed as the time it would run, it would mislead.
  const state = automation.held ? `${rests ? `${rests}, ` : ""}held (dynamicAutomations.dynamic is off)` : (rests ?? (automation.nextRunAt ? `next ${automation.nextRunAt}` : "done"));
  return `${automation.name.padEnd(24)} ${automation.source.padEnd(8)} ${describeSchedule(automation.schedule).padEnd(32)} ${state}  ${JSON.stringify(automation.message).slice(0, 60)}`;
}

function describeSchedule(schedule: NormalizedSchedule): string {
  switch (schedule.kind) {
    case "cron":
      return `cron "${schedule.expression}" ${schedule.timezone}`;
    case "every":
      return `every ${schedule.everyMs} ms`;
    case "at":
      return `at ${schedule.at}`;
  }
}
