import { AssemblyLineError } from "./errors.js";

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * ASSEMBLY_LINE_LOG_LEVEL's value as every logger of the runtime and its hosts reads
 * it, so the JSON and the readable logs agree: trimmed, empty (or unset) for info,
 * as the OTEL_EXPORTER_OTLP_* variables take theirs; anything but a level is refused.
 * Here, not in the runtime, so a host's readable logger reads it without loading the runtime.
 */
export function readLogLevel(value: string | undefined): LogLevel {
  const level = value?.trim() ?? "";
  if (level === "") return "info";
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogLevel;
  throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `ASSEMBLY_LINE_LOG_LEVEL=${level} is not one of ${LOG_LEVELS.join(", ")}`, {
    fix: "Set ASSEMBLY_LINE_LOG_LEVEL to debug, info, warn or error, or unset it (or leave it empty) for info.",
  });
}
