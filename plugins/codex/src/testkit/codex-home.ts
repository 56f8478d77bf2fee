import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveCodexCommand } from "../options.js";

/** Does the real codex binary run here? The engine's kit and tests need it. */
export function codexRuns(): { ok: boolean; why: string } {
  const command = resolveCodexCommand({}, process.env);
  const result = spawnSync(command.file, [...command.args, "--version"], { encoding: "utf8", timeout: 30_000 });
  return result.status === 0 ? { ok: true, why: result.stdout.trim() } : { ok: false, why: `${command.file} ${command.args.join(" ")} --version failed: ${result.error?.message ?? result.stderr}` };
}

/**
 * A CODEX_HOME whose config.toml points the model provider at the local
 * Responses server; with `apiKey`, logged in through the real CLI
 * (`codex login --with-api-key`, which writes the session to auth.json).
 */
export function codexHome(baseUrl: string, apiKey?: string): string {
  const home = mkdtempSync(join(tmpdir(), "al-codex-home-"));
  writeFileSync(
    join(home, "config.toml"),
    [
      'model_provider = "local"',
      "[model_providers.local]",
      'name = "local Responses server"',
      `base_url = "${baseUrl}"`,
      'wire_api = "responses"',
      "requires_openai_auth = true",
      "",
    ].join("\n"),
  );
  if (apiKey) {
    const command = resolveCodexCommand({}, process.env);
    const login = spawnSync(command.file, [...command.args, "login", "--with-api-key"], { input: apiKey, encoding: "utf8", env: { ...process.env, CODEX_HOME: home }, timeout: 30_000 });
    if (login.status !== 0) throw new Error(`codex login --with-api-key failed: ${login.stderr}`);
  }
  return home;
}
