import { AssemblyLineError } from "@assemblyline-agents/core";

/**
 * A --port value: digits only, 0-65535 (0 picks a free port). An empty or blank
 * value is refused rather than read as 0 (Number("") is 0), as are "1e3" and "0x50".
 */
export function parsePort(text: string | undefined, usage: string): number | undefined {
  if (text === undefined) return undefined;
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 0 && port <= 65_535)) {
    const problem = text.trim() === "" ? "--port is empty" : `--port ${text} is not a port number (0-65535)`;
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", problem, { fix: `Give a port such as --port 3000 (0 picks a free one), or leave --port out. usage: ${usage}` });
  }
  return port;
}
