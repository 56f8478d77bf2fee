import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The provider prefix of model specs this route serves: `openai-codex/<model>`. */
export const CODEX_PROVIDER = "openai-codex";
export const CODEX_HARNESS_NAME = "codex";

/**
 * Codex features that give the model tools of its own (a shell, file edits,
 * web search, sub-agents, ...). They are switched off so that every tool call
 * goes through the runtime's pipeline.
 */
export const DISABLED_CODEX_FEATURES = [
  "shell_tool",
  "unified_exec",
  "view_image",
  "multi_agent",
  "goals",
  "plugins",
  "apps",
  "image_generation",
  "computer_use",
  "browser_use",
  "in_app_browser",
  "hooks",
  "skill_search",
  "sleep_tool",
  "tool_suggest",
] as const;

export interface CodexHarnessOptions {
  /** The codex binary; default env CODEX_BINARY, else the one @openai/codex installs, else `codex` on PATH. */
  command?: string;
  /** Extra `-c key=value` overrides for the app-server (TOML values). */
  config?: Record<string, string>;
  /** The environment of the app-server (CODEX_HOME selects the login session). Default process.env. */
  env?: Record<string, string | undefined>;
}

/** Find the codex binary: the option, CODEX_BINARY, @openai/codex's launcher, else PATH. */
export function resolveCodexCommand(options: CodexHarnessOptions, env: Record<string, string | undefined>): { file: string; args: string[] } {
  const explicit = options.command ?? env.CODEX_BINARY;
  if (explicit) return { file: explicit, args: [] };
  try {
    const launcher = join(dirname(createRequire(import.meta.url).resolve("@openai/codex/package.json")), "bin", "codex.js");
    if (existsSync(launcher)) return { file: process.execPath, args: [launcher] };
  } catch {
    // Not installed beside this package: fall back to PATH.
  }
  return { file: "codex", args: [] };
}

/** The arguments that start the app-server with Codex's own tools off. */
export function appServerArgs(options: CodexHarnessOptions): string[] {
  const overrides = { web_search: '"disabled"', ...options.config };
  return [
    "app-server",
    ...DISABLED_CODEX_FEATURES.flatMap((feature) => ["--disable", feature]),
    ...Object.entries(overrides).flatMap(([key, value]) => ["-c", `${key}=${value}`]),
  ];
}
