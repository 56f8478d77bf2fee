import { AssemblyLineError } from "./errors.js";
import type { SandboxExecOptions } from "./sandbox.js";
import { MAX_TIMER_MS, isTimerDelay } from "./timeout.js";

/** The options `Sandbox.exec` takes; any other key is refused. */
export const EXEC_OPTION_NAMES: readonly (keyof SandboxExecOptions)[] = ["cwd", "timeoutMs", "maxOutputBytes", "env"];

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Refuse exec options a sandbox would ignore or misread: an unknown key (`timeout`
 * ran with the default), an `env` that is not an object of variable names to strings (a name
 * `A=B` set A to `B=...`, a name with a space vanished, a number went in as text) or holds
 * a NUL byte (no process can be given one), a `timeoutMs` no timer can wait (0, or past 24.8 days: it fired at once), a `maxOutputBytes`
 * that is no byte count, a `cwd` that is no text. Where `cwd` leads is each sandbox's own to check.
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
  const { cwd, timeoutMs, maxOutputBytes } = record;
  if (cwd !== undefined && typeof cwd !== "string") refuse(`option cwd is ${JSON.stringify(cwd) ?? String(cwd)}, not a path`, 'Pass a folder under /workspace, e.g. "/workspace/src", or omit cwd.');
  if (timeoutMs !== undefined && !isTimerDelay(timeoutMs)) {
    refuse(`option timeoutMs is ${JSON.stringify(timeoutMs) ?? String(timeoutMs)}, not a positive number of milliseconds at most ${MAX_TIMER_MS} (about 24.8 days)`, "Pass e.g. 30000, or omit timeoutMs for the sandbox's default.");
  }
  if (maxOutputBytes !== undefined && (typeof maxOutputBytes !== "number" || !Number.isInteger(maxOutputBytes) || maxOutputBytes < 0)) {
    refuse(`option maxOutputBytes is ${JSON.stringify(maxOutputBytes) ?? String(maxOutputBytes)}, not a non-negative whole number of bytes`, "Pass e.g. 65536, or omit maxOutputBytes for the sandbox's default.");
  }
  const env = record.env;
  if (env !== undefined) {
    if (typeof env !== "object" || env === null || Array.isArray(env)) refuse(`option env is ${JSON.stringify(env)}, not an object`, 'Pass env as { NAME: "value" }.');
    for (const [name, value] of Object.entries(env as Record<string, unknown>)) {
      if (!VARIABLE_NAME.test(name)) refuse(`option env has the name ${JSON.stringify(name)}, not a variable name`, "Use names of letters, digits and _, not starting with a digit.");
      if (typeof value !== "string") refuse(`option env.${name} is ${JSON.stringify(value) ?? String(value)}, not a string`, `Pass ${name}'s value as a string.`);
      // Else Node throws its own TypeError, and Docker reports it as a command's output, as if the command had run.
      if ((value as string).includes("\0")) refuse(`option env.${name} holds a NUL byte, which no process environment can carry`, `Remove the NUL byte from ${name}'s value; pass binary data in a file instead.`);
    }
  }
  return record as SandboxExecOptions;
}
