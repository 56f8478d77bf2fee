import type { RuntimeLogger } from "@assemblyline-agents/core";
import { readableLogger } from "../host/readable-logger.js";
import type { CommandIO } from "./io.js";

/**
 * The runtime's own log lines about how a run ended. A command that runs or continues a
 * run prints that ending itself (the timeline's last event and the closing line), so
 * these would only repeat it.
 */
const REPORTED_BY_THE_COMMAND = new Set(["run failed", "run reached a budget", "run reached a budget; paused for a decision"]);

/**
 * The runtime's logger for a command that prints a readable timeline: one readable line
 * on stderr per log entry (a hook that threw, a connection that failed), never a raw JSON
 * line among the timeline. With --json, undefined: the runtime's JSON logs go to stderr,
 * beside the one envelope on stdout.
 */
export function commandLogger(io: CommandIO, json: boolean): RuntimeLogger | undefined {
  if (json) return undefined;
  const readable = readableLogger(io.err);
  const unlessReported =
    (write: RuntimeLogger["warn"]): RuntimeLogger["warn"] =>
    (fields, msg) => {
      if (msg !== undefined && REPORTED_BY_THE_COMMAND.has(msg)) return;
      write(fields, msg);
    };
  return { debug: readable.debug, info: unlessReported(readable.info), warn: unlessReported(readable.warn), error: readable.error };
}
