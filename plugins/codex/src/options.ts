import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

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
  "multi_agent_v2",
  "multi_agent_v2_dynamic_tools",
  "memories",
  "external_agent_memory_import",
  "agent_message_board",
  "agent_message_board_mcp",
  "send_message_to_user_async",
  "wake_on_agent_messages",
  "runtime_agent_instances",
  "code_mode",
  "code_mode_only",
  "artifact",
  "chronicle",
  "request_permissions_tool",
  "standalone_web_search",
  "enable_mcp_apps",
  "image_generation_animation",
  "incremental_exec_tools",
  "default_mode_request_user_input",
  "skill_mcp_dependency_install",
  "workspace_dependencies",
  "current_time_reminder",
  "model_catalog_in_context",
  "context_management",
  "multi_env_copy_file",
  "deferred_executor",
  "executor_capability_discovery",
  "executor_capability_discovery_v2",
  "skill_catalog_deltas",
  "token_budget",
] as const;

/**
 * Tool names the app-server keeps for its own tools in @openai/codex 0.169: a
 * dynamic tool of such a name is hidden behind Codex's, so an agent tool may not
 * take it. `request_user_input` is offered whatever the config (a call to it is
 * asked of the client as a server request, which the route refuses);
 * `exec_command` (its shell) is off, yet a dynamic tool of that name is still
 * dropped and the model's call answered "unsupported call".
 */
export const CODEX_RESERVED_TOOL_NAMES = ["request_user_input", "exec_command"] as const;

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

/**
 * Refuse `config` keys the route decides itself: `model` (the run's model spec names it; Codex
 * would be told the spec's model on every turn anyway) and the switches that keep Codex's own
 * tools off (`web_search`, `tools.*`, `features.*` of a disabled feature), which a `-c` override
 * could turn back on: those tools would act outside the runtime's pipeline (approvals, budgets,
 * the journal).
 */
export function refuseRouteOwnedConfig(config: Record<string, string> | undefined): void {
  for (const key of Object.keys(config ?? {})) {
    const refusal = notPlainKey(key) ?? routeOwnedConfig(key);
    const option = PLAIN_KEY.test(key) ? `config.${key}` : `config[${JSON.stringify(key)}]`;
    if (refusal) throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", `codexAgentHarness: ${option} is not an option: ${refusal.why}`, { fix: refusal.fix, details: { option } });
  }
}

/** A `config` key as the checks below can read it: bare TOML key segments (letters, digits, `_`, `-`) joined by dots. */
const PLAIN_KEY = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * Refuse a key that is not a plain dotted name. Codex trims a `-c` key and
 * splits it at its dots, so `" web_search"` is Codex's `web_search`: a key
 * compared as written could slip a route-owned one past the checks. Quoted,
 * spaced or empty segments are refused rather than second-guessed.
 */
function notPlainKey(key: string): { why: string; fix: string } | undefined {
  if (PLAIN_KEY.test(key)) return undefined;
  return {
    why: "config keys are plain dotted names (letters, digits, _ and -, joined by dots), without spaces or quotes",
    fix: `Write the key as Codex's config.toml names it, such as "model_providers.<id>.request_max_retries"${key.trim() !== key && PLAIN_KEY.test(key.trim()) ? `: "${key.trim()}"` : ""}.`,
  };
}

function routeOwnedConfig(key: string): { why: string; fix: string } | undefined {
  const [head, rest] = [key.split(".", 1)[0]!, key.slice(key.indexOf(".") + 1)];
  if (key === "model") return { why: "the run's model spec chooses the model", fix: "Name the model in the agent's or the run's model spec: openai-codex/<model>." };
  const ownTools = "Codex's own tools stay off so every tool call goes through the runtime's pipeline (approvals, budgets, the journal)";
  if (key === "web_search" || head === "tools") return { why: ownTools, fix: "Remove it; give the agent a web search tool of its own (tools/ or a connection) instead." };
  if (key === "features" || (head === "features" && (DISABLED_CODEX_FEATURES as readonly string[]).includes(rest))) return { why: ownTools, fix: "Remove it; the features the route turns off are listed in DISABLED_CODEX_FEATURES." };
  if (head === "mcp_servers") {
    return { why: "Codex would run MCP servers' tools itself, outside the runtime's pipeline (approvals, budgets, the journal)", fix: "Remove it; give the agent the MCP server as a connection, whose tools go through the pipeline." };
  }
  return undefined;
}

/**
 * `-c` overrides set after the user's, so they win: Codex would otherwise add to
 * every agent's prompt the skills of the user's CODEX_HOME/skills and its own
 * system skills, and instructions about a sandbox and commands the model has no
 * tool for.
 */
export const CODEX_PROMPT_OVERRIDES = { "skills.include_instructions": "false", include_permissions_instructions: "false" } as const;

/** The arguments that start the app-server with Codex's own tools off. */
export function appServerArgs(options: CodexHarnessOptions): string[] {
  const overrides = { web_search: '"disabled"', ...options.config, ...CODEX_PROMPT_OVERRIDES };
  return [
    "app-server",
    ...DISABLED_CODEX_FEATURES.flatMap((feature) => ["--disable", feature]),
    ...Object.entries(overrides).flatMap(([key, value]) => ["-c", `${key}=${value}`]),
  ];
}

/**
 * Thread config that switches off every MCP server of the effective config (a
 * Codex CLI user's config.toml): Codex would offer their tools to the model and
 * run them itself, outside the runtime's pipeline. Codex merges a `-c
 * mcp_servers={}` into the file's table instead of replacing it, so each
 * server is turned off by name.
 */
export function mcpServersOff(effective: Record<string, unknown>): Record<string, unknown> {
  const servers = effective.mcp_servers;
  if (typeof servers !== "object" || servers === null) return {};
  const off = Object.fromEntries(Object.keys(servers).map((name) => [name, { enabled: false }]));
  return Object.keys(off).length > 0 ? { mcp_servers: off } : {};
}

/** Refuse agent tools named like a tool Codex keeps for itself: the model's calls would never reach the agent's. */
export function refuseReservedToolNames(tools: ReadonlyArray<{ name: string }>): void {
  const clash = tools.find((tool) => (CODEX_RESERVED_TOOL_NAMES as readonly string[]).includes(tool.name));
  if (!clash) return;
  throw new AssemblyLineError(
    "AL_ERR_CODEX_TOOL_NAME",
    `the agent's tool "${clash.name}" has the name of a tool the Codex app-server keeps for itself; on the openai-codex/* route the model's calls to it would never reach the agent's tool`,
    { fix: `Rename the tool (its tools/ file or connection tool) so it is not one of ${CODEX_RESERVED_TOOL_NAMES.join(", ")}, or run the agent on another engine.`, details: { tool: clash.name } },
  );
}
