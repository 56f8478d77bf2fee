import { resolve } from "node:path";
import { AssemblyLineError, isAssemblyLineError } from "@assemblyline-agents/core";
import type { PiModelCatalog } from "@assemblyline-agents/pi";
import { SCRIPTED_PREFIX, loadModelScript, type ModelScript } from "@assemblyline-agents/runtime";
import { stringOption, type ParsedCommand } from "./args.js";
import { catalogFor, staticModelCheck, type ModelFlags } from "./local-runtime.js";

/*
 * What --model, --base-url and --api mean depends on the command:
 *   run, automations run, dev, start  the model new runs use, and the server that serves it
 *   approve, deny, answer, resume     a run continues on the model it started with (its stored modelSpec):
 *                                     --model may only name that model; --base-url / --api serve it
 * Commands that never call a model (runs list/show/migrate, automations list/pause/resume) do not take them.
 */

/** The config key that fills each model flag, for errors about a value the config gave. */
const CONFIG_NAMES: Record<string, string> = { model: "model", "base-url": "baseUrl", api: "api" };

/** Where a flag's value came from, as an error names it: "--model" or "the config's model". */
function named(parsed: ParsedCommand, flag: string): string {
  return parsed.configured?.includes(flag) ? `the config's ${CONFIG_NAMES[flag] ?? flag}` : `--${flag}`;
}

function usage(message: string, fix: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_CLI_USAGE", message, { fix });
}

/** --model, --base-url and --api as given (flag or config), refusing an empty value, a --base-url that is not a URL and an --api without a --base-url. */
export function modelFlagsOf(parsed: ParsedCommand): ModelFlags {
  const read = (flag: string): string | undefined => {
    const value = stringOption(parsed, flag);
    if (value !== undefined && value.trim() === "") throw usage(`${named(parsed, flag)} is empty`, `Give a value or leave --${flag} out.`);
    return value;
  };
  const model = read("model");
  const baseUrl = read("base-url");
  const api = read("api");
  if (baseUrl !== undefined) checkServerUrl(baseUrl, named(parsed, "base-url"));
  if (api !== undefined && baseUrl === undefined) {
    throw usage(`${named(parsed, "api")} ${api} is the wire API of the server --base-url names, but no --base-url is given`, "Pass --base-url <url> too, or leave --api out.");
  }
  return {
    ...(model !== undefined ? { model } : {}),
    ...(baseUrl !== undefined ? { baseUrl, ...(parsed.configured?.includes("base-url") ? { baseUrlFromConfig: true } : {}) } : {}),
    ...(api !== undefined ? { api } : {}),
  };
}

/**
 * A model server is reached over HTTP: anything else is refused before a run is created. The
 * usual slip, `localhost:11434/v1` without its http://, parses as a URL whose scheme is
 * "localhost:", so a parse alone would let it through to fail only after the provider's retries.
 */
function checkServerUrl(baseUrl: string, name: string): void {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  if (url?.protocol === "http:" || url?.protocol === "https:") return;
  // A host and port with the scheme left out; a value with some other scheme gets no guess.
  const suggestion = `http://${baseUrl}`;
  const guess = !baseUrl.includes("//") && URL.canParse(suggestion) ? `; did you mean --base-url ${suggestion}?` : "";
  throw usage(
    url === undefined ? `${name} ${baseUrl} is not a URL` : `${name} ${baseUrl} is not an http:// or https:// URL (its scheme is ${url.protocol})`,
    `Give the server's http:// or https:// address, e.g. --base-url http://127.0.0.1:11434/v1${guess}`,
  );
}

/** A scripted spec with its file made absolute, as runs record it. */
export function absoluteModelSpec(spec: string): string {
  return spec.startsWith(SCRIPTED_PREFIX) ? `${SCRIPTED_PREFIX}${resolve(spec.slice(SCRIPTED_PREFIX.length))}` : spec;
}

/**
 * The check `build` makes of agent.ts's model, for a model chosen on the command
 * line, made before any run is created or any server listens: a provider/model the
 * engine's catalog (with --base-url's entry) knows (AL_ERR_MODEL_UNKNOWN), or a
 * scripted file that exists and parses (AL_ERR_SCRIPTED_MODEL).
 */
export async function checkModelSpec(spec: string, models: PiModelCatalog | undefined): Promise<void> {
  if (spec.startsWith(SCRIPTED_PREFIX)) {
    loadModelScript(resolve(spec.slice(SCRIPTED_PREFIX.length)));
    return;
  }
  try {
    await staticModelCheck(models)(spec);
  } catch (error) {
    if (!isAssemblyLineError(error, "AL_ERR_MODEL_UNKNOWN") || models?.[spec] !== undefined) throw error;
    const message = error.message.split("\n")[0]!.replace(/^AL_ERR_\w+: /, "");
    throw new AssemblyLineError("AL_ERR_MODEL_UNKNOWN", message, {
      fix: `${error.fix ?? "Use a provider/model the engine knows."} On the command line, --base-url <url> serves ${spec} from an OpenAI- or Anthropic-compatible server.`,
      cause: error,
    });
  }
}

/**
 * --offline-script's file must exist and parse, whether or not this run ends up needing it. It is
 * the fallback for agent.ts's model when that model cannot run here: beside --model (or the config's
 * model), which the run uses instead, it would never be read.
 */
export function checkOfflineScript(file: string | undefined, parsed: ParsedCommand): void {
  if (file === undefined) return;
  if (stringOption(parsed, "model") !== undefined) {
    throw usage(
      `--offline-script is the fallback for agent.ts's model, but ${named(parsed, "model")} chooses the model, so the script would never be read`,
      "Leave out --offline-script to run the model you named, or the model to run agent.ts's (the script stands in when its API key is missing here).",
    );
  }
  if (file.trim() === "") throw usage("--offline-script is empty", "Give a scripted conversation file (e.g. conversations/hello.json), or leave --offline-script out.");
  checkScriptFile(file, "--offline-script");
}

/**
 * A scripted conversation a flag names (--offline-script, test's --conversation), read
 * before anything is built: its errors name that flag, not the scripted: model spec.
 */
export function checkScriptFile(file: string, flag: string): ModelScript {
  try {
    return loadModelScript(resolve(file));
  } catch (error) {
    if (!isAssemblyLineError(error)) throw error;
    throw new AssemblyLineError(error.code, `${flag} ${file}: ${error.message.split("\n")[0]!.replace(/^AL_ERR_\w+: /, "")}`, {
      fix: 'Give a JSON file of scripted turns that exists, e.g. { "turns": [ { "text": "Done." } ] }.',
      cause: error,
    });
  }
}

/**
 * The model catalog a continued run (approve, deny, answer, resume) is served
 * with. The run keeps its own model: --model naming another is refused rather
 * than ignored. --base-url / --api serve the run's model. The config's model,
 * baseUrl and api describe the runs the config starts: they apply only to a run
 * on that model (agent.ts's when the config names none), and are set aside otherwise.
 */
export async function continuedRunModels(parsed: ParsedCommand, run: { id: string; modelSpec: string }, agentModel: string, command: string): Promise<PiModelCatalog | undefined> {
  const flags = modelFlagsOf(parsed);
  const configured = (flag: string) => parsed.configured?.includes(flag) === true;
  // A scripted spec is read relative to the working folder, by the scripted route as here: compared resolved on both sides.
  const runModel = absoluteModelSpec(run.modelSpec);
  if (flags.model !== undefined && !configured("model") && absoluteModelSpec(flags.model) !== runModel) {
    throw usage(
      `--model ${flags.model}: run ${run.id} continues on its own model ${run.modelSpec}; ${command} cannot switch a started run to another model`,
      `Leave --model out (or pass --model ${run.modelSpec}). To use ${flags.model}, start a new run: assembly-line run --model ${flags.model}.`,
    );
  }
  // The config's model, also when --model repeated the run's own on the command line (the config's server then still applies).
  const configModel = configured("model") ? flags.model! : (parsed.configModel ?? agentModel);
  const fromConfigApplies = absoluteModelSpec(configModel) === runModel;
  const baseUrl = configured("base-url") && !fromConfigApplies ? undefined : flags.baseUrl;
  const api = configured("api") && !fromConfigApplies ? undefined : flags.api;
  if (baseUrl === undefined) {
    if (api !== undefined) throw usage(`--api ${api} is the wire API of the server --base-url names, but no --base-url applies to run ${run.id}`, "Pass --base-url <url> too, or leave --api out.");
    return undefined;
  }
  if (run.modelSpec.startsWith(SCRIPTED_PREFIX)) {
    if (configured("base-url")) return undefined;
    throw usage(`--base-url ${baseUrl}: run ${run.id} continues on the scripted model ${run.modelSpec}, which no server serves`, "Leave --base-url and --api out.");
  }
  const models = await catalogFor({ model: run.modelSpec, baseUrl, ...(api !== undefined ? { api } : {}) }, undefined);
  await checkModelSpec(run.modelSpec, models);
  return models;
}
