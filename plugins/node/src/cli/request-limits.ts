import { AssemblyLineError } from "@assemblyline-agents/core";
import { DEFAULT_REQUEST_TIMEOUT_MS, type NodeRuntimeOptions } from "../host/options.js";
import { stringOption, type ParsedCommand } from "./args.js";

/** The longest delay a Node timer takes: a longer timeout would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The host's slow-request bounds as `dev` and `start` flags, each the listenNodeRuntime
 * option of the same meaning. A flag left out is left to the host: its env variable
 * (ASSEMBLY_LINE_REQUEST_TIMEOUT_MS, ...), else its default.
 */
export const REQUEST_LIMIT_FLAGS = {
  "request-timeout-ms": { option: "requestTimeoutMs", max: MAX_TIMER_MS, example: "30000" },
  "headers-timeout-ms": { option: "headersTimeoutMs", max: MAX_TIMER_MS, example: "10000" },
  "body-idle-timeout-ms": { option: "bodyIdleTimeoutMs", max: MAX_TIMER_MS, example: "10000" },
  "max-connections": { option: "maxConnections", max: Number.MAX_SAFE_INTEGER, example: "1024" },
} as const satisfies Record<string, { option: keyof RequestLimits; max: number; example: string }>;

type RequestLimitFlag = keyof typeof REQUEST_LIMIT_FLAGS;
export type RequestLimits = Pick<NodeRuntimeOptions, "requestTimeoutMs" | "headersTimeoutMs" | "bodyIdleTimeoutMs" | "maxConnections">;

/**
 * The request-limit flags given, as listenNodeRuntime options. Digits only, at least 1: an empty
 * value, `1e3`, `0x10` or `10s` is refused here, naming the flag, rather than by the host after
 * the agent is built.
 */
export function requestLimitOptions(parsed: ParsedCommand, usage: string, env: Record<string, string | undefined> = process.env): RequestLimits {
  const limits: RequestLimits = {};
  for (const [flag, { option, max, example }] of Object.entries(REQUEST_LIMIT_FLAGS) as [RequestLimitFlag, (typeof REQUEST_LIMIT_FLAGS)[RequestLimitFlag]][]) {
    const text = stringOption(parsed, flag);
    if (text === undefined) continue;
    const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!(value >= 1 && value <= max)) {
      const problem = text.trim() === "" ? `--${flag} is empty` : `--${flag} ${text} is not a whole number from 1 to ${max}`;
      throw new AssemblyLineError("AL_ERR_CLI_USAGE", problem, { fix: `Give a whole number such as --${flag} ${example}, or leave --${flag} out. usage: ${usage}` });
    }
    limits[option] = value;
  }
  checkHeadersWithinRequest(limits, env, usage);
  return limits;
}

/**
 * The headers are part of the request: a headers timeout longer than the request's is refused here,
 * naming the flag, whichever side the command line gave. The side it left out is what the host
 * would use: its env variable (when a whole number; the host refuses another), else its default.
 */
function checkHeadersWithinRequest(limits: RequestLimits, env: Record<string, string | undefined>, usage: string): void {
  const fromEnv = (variable: string) => {
    const text = env[variable]?.trim();
    return text !== undefined && /^\d+$/.test(text) ? { value: Number(text), said: `${variable}=${text}` } : undefined;
  };
  const request = limits.requestTimeoutMs !== undefined ? { value: limits.requestTimeoutMs, said: `--request-timeout-ms ${limits.requestTimeoutMs}` } : (fromEnv("ASSEMBLY_LINE_REQUEST_TIMEOUT_MS") ?? { value: DEFAULT_REQUEST_TIMEOUT_MS, said: `the default --request-timeout-ms ${DEFAULT_REQUEST_TIMEOUT_MS}` });
  // Without a headers timeout set, the host's default is never longer than the request's.
  const headers = limits.headersTimeoutMs !== undefined ? { value: limits.headersTimeoutMs, said: `--headers-timeout-ms ${limits.headersTimeoutMs}` } : fromEnv("ASSEMBLY_LINE_HEADERS_TIMEOUT_MS");
  if (headers === undefined || headers.value <= request.value) return;
  // Both from the environment: the host names them.
  if (limits.requestTimeoutMs === undefined && limits.headersTimeoutMs === undefined) return;
  throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${headers.said} is longer than ${request.said}`, {
    fix: `The headers are part of the request: give --headers-timeout-ms at most ${request.value}, or a longer --request-timeout-ms. usage: ${usage}`,
  });
}
