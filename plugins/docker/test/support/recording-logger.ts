import type { RuntimeLogger } from "@assemblyline-agents/core";

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  fields: Record<string, unknown>;
  msg: string | undefined;
}

/** A RuntimeLogger that keeps what it is given, so a test can read what the plugin reported. */
export function recordingLogger(): RuntimeLogger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry["level"]) => (fields: Record<string, unknown>, msg?: string) => void entries.push({ level, fields, msg });
  return { entries, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
