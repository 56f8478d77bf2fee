import type { RuntimeLogger } from "@assemblyline-agents/core";

/**
 * What the plugin logs when its host gives it no logger: warnings and errors
 * as JSON lines on stderr (the runtime's log format), so a left image is seen
 * without a deploy's or a run's output filling with routine lines.
 */
export function stderrLogger(): RuntimeLogger {
  const write = (level: string) => (fields: Record<string, unknown>, msg?: string) => {
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), plugin: "docker", ...fields, ...(msg === undefined ? {} : { msg }) })}\n`);
  };
  const quiet = () => undefined;
  return { debug: quiet, info: quiet, warn: write("warn"), error: write("error") };
}
