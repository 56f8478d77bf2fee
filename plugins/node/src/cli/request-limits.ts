import { AssemblyLineError } from "@assemblyline-agents/core";
import type { NodeRuntimeOptions } from "../host/options.js";
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
export function requestLimitOptions(parsed: ParsedCommand, usage: string): RequestLimits {
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
  const { requestTimeoutMs, headersTimeoutMs } = limits;
  if (requestTimeoutMs !== undefined && headersTimeoutMs !== undefined && headersTimeoutMs > requestTimeoutMs) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--headers-timeout-ms ${headersTimeoutMs} is longer than --request-timeout-ms ${requestTimeoutMs}`, {
      fix: `The headers are part of the request: give --headers-timeout-ms at most --request-timeout-ms. usage: ${usage}`,
    });
  }
  return limits;
}
