import { AssemblyLineError } from "./errors.js";
import type { SandboxExecOptions } from "./sandbox.js";

/** The options `Sandbox.exec` takes; any other key is refused. */
export const EXEC_OPTION_NAMES: readonly (keyof SandboxExecOptions)[] = ["cwd", "timeoutMs", "maxOutputBytes", "env"];

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Refuse the shape of exec options a sandbox would ignore or misread: an unknown key (`timeout`
 * ran with the default), an `env` that is not an object of variable names to strings (a name
 * `A=B` set A to `B=...`, a name with a space vanished, a number went in as text). The numbers'
 * ranges and the `cwd` path are each sandbox's own to check.
 */
export function checkExecOptions(options: unknown): SandboxExecOptions {
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `exec ${problem}`, { fix });
  };
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) refuse(`options are ${JSON.stringify(options)}, not an object`, "Pass { cwd, timeoutMs, maxOutputBytes, env } or nothing.");
  const record = options as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !(EXEC_OPTION_NAMES as readonly string[]).includes(key));
  if (unknown.length > 0) refuse(`option${unknown.length === 1 ? "" : "s"} ${unknown.map((key) => JSON.stringify(key)).join(", ")} unknown`, `The options are ${EXEC_OPTION_NAMES.join(", ")}; check the spelling.`);
  const env = record.env;
  if (env !== undefined) {
    if (typeof env !== "object" || env === null || Array.isArray(env)) refuse(`option env is ${JSON.stringify(env)}, not an object`, 'Pass env as { NAME: "value" }.');
    for (const [name, value] of Object.entries(env as Record<string, unknown>)) {
      if (!VARIABLE_NAME.test(name)) refuse(`option env has the name ${JSON.stringify(name)}, not a variable name`, "Use names of letters, digits and _, not starting with a digit.");
      if (typeof value !== "string") refuse(`option env.${name} is ${JSON.stringify(value) ?? String(value)}, not a string`, `Pass ${name}'s value as a string.`);
    }
  }
  return record as SandboxExecOptions;
}
