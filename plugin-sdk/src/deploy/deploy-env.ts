export interface DeployEnvOptions {
  /** Variables the release needs (the gateway plugins' declared env, the agent's channel secrets). */
  names: Iterable<string>;
  /** Variables with these prefixes pass too. Default: ASSEMBLY_LINE_. */
  prefixes?: string[];
}

/**
 * The environment a release runs with: only the named variables and the
 * runtime's own (ASSEMBLY_LINE_*), taken from `env` at deploy time. Targets pass
 * it as process environment and never write it into the artifact.
 */
export function deployEnv(env: Record<string, string | undefined>, options: DeployEnvOptions): Record<string, string> {
  const names = new Set(options.names);
  const prefixes = options.prefixes ?? ["ASSEMBLY_LINE_"];
  const chosen: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (names.has(name) || prefixes.some((prefix) => name.startsWith(prefix))) chosen[name] = value;
  }
  return chosen;
}
