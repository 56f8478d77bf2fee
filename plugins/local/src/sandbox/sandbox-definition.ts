import { AssemblyLineError, type SandboxOptions } from "@assemblyline-agents/core";

/**
 * Check what `sandbox.ts` default-exports (`defineSandbox({...})`, or plain
 * options) and return it typed. Throws AL_ERR_SANDBOX_DEFINITION naming `file`
 * and the offending key. `workingDirectory` may only be omitted or `/workspace`:
 * hosted shell commands see a real, physical /workspace, so an alias would
 * point file tools and commands at different places.
 */
export function validateSandboxDefinition(definition: unknown, file = "sandbox.ts"): SandboxOptions {
  const refuse = (what: string, fix: string, details: Record<string, unknown> = {}): never => {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `${file} ${what}`, { fix, details: { file, ...details } });
  };
  if (typeof definition !== "object" || definition === null || Array.isArray(definition)) {
    return refuse("does not default-export defineSandbox({...})", 'Write `export default defineSandbox({ adapter: "local" })`.');
  }
  const options = definition as Record<string, unknown>;
  if (typeof options.adapter !== "string" || options.adapter === "") {
    return refuse(`has adapter: ${describe(options.adapter)}, not an adapter name`, 'Set adapter to a name such as "local", "docker", "daytona", "e2b" or "modal".', {
      key: "adapter",
      value: options.adapter,
    });
  }
  const workingDirectory = options.workingDirectory;
  if (workingDirectory !== undefined && workingDirectory !== "/workspace") {
    const retired = workingDirectory === "/runtime" ? " (/runtime is retired)" : "";
    return refuse(
      `has workingDirectory: ${describe(workingDirectory)}${retired}; only /workspace is valid because hosted shell commands see a real, physical /workspace`,
      'Omit workingDirectory or set it to "/workspace"; other aliases are invalid and /runtime is retired.',
      { key: "workingDirectory", value: workingDirectory },
    );
  }
  for (const key of ["image", "network"] as const) {
    if (options[key] !== undefined && (typeof options[key] !== "string" || options[key] === "")) {
      refuse(`has ${key}: ${describe(options[key])}, not a non-empty string`, `Set ${key} to a string, or omit it.`, { key, value: options[key] });
    }
  }
  const snapshot = options.snapshot;
  if (snapshot !== undefined) {
    const fix = 'Use snapshot: { mode: "manual" | "auto", retainLast?: <positive integer>, reason?: "..." }, or omit it.';
    if (typeof snapshot !== "object" || snapshot === null) return refuse(`has snapshot: ${describe(snapshot)}, not an object`, fix, { key: "snapshot" });
    const { mode, retainLast, reason } = snapshot as Record<string, unknown>;
    if (mode !== "manual" && mode !== "auto") refuse(`has snapshot.mode: ${describe(mode)}, not "manual" or "auto"`, fix, { key: "snapshot.mode", value: mode });
    if (retainLast !== undefined && !(typeof retainLast === "number" && Number.isInteger(retainLast) && retainLast > 0)) {
      refuse(`has snapshot.retainLast: ${describe(retainLast)}, not a positive integer`, fix, { key: "snapshot.retainLast", value: retainLast });
    }
    if (reason !== undefined && typeof reason !== "string") refuse(`has snapshot.reason: ${describe(reason)}, not a string`, fix, { key: "snapshot.reason" });
  }
  return definition as SandboxOptions;
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
