import { join, resolve } from "node:path";
import { stringOption, jsonOption, type ParsedCommand } from "../args.js";
import { CONFIG_KEYS, effectiveValue, loadProjectConfig, type ConfigKey, type EffectiveValue } from "../config.js";
import type { CommandIO } from "../io.js";
import { parsePort } from "../port.js";
import { colors, envelope } from "../output.js";

/** What a command uses when neither a flag nor the config says. */
function defaults(agent: string): Record<ConfigKey, string | number | undefined> {
  return {
    agent: resolve("."),
    stateDir: join(agent, ".assembly-line", "state"),
    model: undefined, // agent.ts's model
    baseUrl: undefined,
    api: undefined,
    "host.port": process.env.PORT ? Number(process.env.PORT) : 3000,
    "host.host": process.env.HOST || "127.0.0.1 (dev), 0.0.0.0 (start)",
  };
}

const MODEL_SERVER_KEYS = new Set<ConfigKey>(["baseUrl", "api"]);

const DEFAULT_NOTES: Partial<Record<ConfigKey, string>> = { model: "agent.ts's model", baseUrl: "the model catalog's", api: "the model catalog's" };

/** `config show`: each setting's effective value and where it came from (flag, config file, default). */
export async function configShow(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  // Shown as dev and start would take it, so refused as they would refuse it.
  parsePort(stringOption(parsed, "port"), "assembly-line config show [--port <n>] (assembly-line config show --help)");
  const config = await loadProjectConfig();
  const agent = effectiveValue(stringOption(parsed, "agent"), "agent", config, resolve("."));
  if (agent.source === "flag") agent.value = resolve(String(agent.value));
  const fallback = defaults(String(agent.value));
  // As a command takes them: the config's baseUrl and api describe the config's model, and a --model goes without them.
  const modelChosen = stringOption(parsed, "model") !== undefined;
  const settings = {} as Record<ConfigKey, EffectiveValue>;
  for (const key of Object.keys(CONFIG_KEYS) as ConfigKey[]) {
    const from = modelChosen && MODEL_SERVER_KEYS.has(key) ? { values: {} } : config;
    settings[key] = key === "agent" ? agent : effectiveValue(stringOption(parsed, CONFIG_KEYS[key].flag), key, from, fallback[key]);
  }
  if (jsonOption(parsed)) {
    io.out(envelope({ configFile: config.filepath ?? null, settings }));
    return 0;
  }
  const paint = colors(io, "out");
  io.out(config.filepath ? `config file: ${config.filepath}` : "config file: none (assembly-line.config.{ts,js,mjs,json} or package.json \"assembly-line\" from here up to the project root)");
  for (const [key, { value, source }] of Object.entries(settings) as Array<[ConfigKey, EffectiveValue]>) {
    const shown = value === undefined ? paint.dim(`(${DEFAULT_NOTES[key] ?? "unset"})`) : String(value);
    const from = source === "flag" ? `--${CONFIG_KEYS[key].flag}` : source === "default" ? "default" : source.config;
    io.out(`${key.padEnd(10)} ${shown}  ${paint.dim(`from ${from}`)}`);
  }
  return 0;
}
