import { AssemblyLineError } from "@assemblyline-agents/core";
import { getEnvApiKey, type Api, type Model } from "@mariozechner/pi-ai";
import type { PiHarnessOptions } from "./options.js";

/**
 * Sent to a server declared with `apiKeyEnv: false`: the OpenAI SDK refuses an
 * empty key, and local servers ignore the header.
 */
export const NO_API_KEY = "no-api-key";

/** What pi-ai's getEnvApiKey returns when ambient credentials (AWS, Google ADC) are present. */
const AMBIENT_CREDENTIALS = "<authenticated>";

/**
 * Variables whose name does not follow `<PROVIDER>_API_KEY`. pi-ai reads them but
 * exports no way to name an unset one, and the error must say what to set.
 */
const ENV_VARIABLE_EXCEPTIONS: Record<string, string> = {
  google: "GEMINI_API_KEY",
  "google-vertex": "GOOGLE_CLOUD_API_KEY",
  "vercel-ai-gateway": "AI_GATEWAY_API_KEY",
  moonshotai: "MOONSHOT_API_KEY",
  "moonshotai-cn": "MOONSHOT_API_KEY",
  huggingface: "HF_TOKEN",
  "opencode-go": "OPENCODE_API_KEY",
  "kimi-coding": "KIMI_API_KEY",
  "cloudflare-workers-ai": "CLOUDFLARE_API_KEY",
  "cloudflare-ai-gateway": "CLOUDFLARE_API_KEY",
  "github-copilot": "COPILOT_GITHUB_TOKEN",
  "amazon-bedrock": "AWS_PROFILE (or AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY)",
};

/** The environment variable a provider's key is read from, as pi-ai reads it. */
export function apiKeyVariable(provider: string): string {
  return ENV_VARIABLE_EXCEPTIONS[provider] ?? `${provider.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}_API_KEY`;
}

/**
 * The key for one model call. `undefined` means the provider authenticates with
 * ambient credentials (AWS profile, Google ADC) and pi-ai should not get a key.
 * Order: host `apiKeys[provider]`, the entry's `apiKeyEnv`, the provider's usual variable,
 * then the other credentials pi-ai reads for the provider.
 */
export function resolvePiApiKey(spec: string, model: Model<Api>, options: PiHarnessOptions): string | undefined {
  const hostKey = options.apiKeys?.[model.provider];
  if (hostKey) return hostKey;

  const entryVariable = options.models?.[spec]?.apiKeyEnv;
  if (entryVariable === false) return NO_API_KEY;
  const variable = entryVariable ?? apiKeyVariable(model.provider);
  // The declared variable first: pi-ai prefers others (ANTHROPIC_OAUTH_TOKEN, which also makes its requests
  // pose as Claude Code; GH_TOKEN for github-copilot) and is asked only when it is unset.
  const fromEnv = entryVariable ? process.env[entryVariable] : process.env[variable] || getEnvApiKey(model.provider);
  if (fromEnv === AMBIENT_CREDENTIALS) return undefined;
  if (fromEnv) return fromEnv;

  throw new AssemblyLineError("AL_ERR_MODEL_API_KEY", `No API key for ${spec}: ${variable} is not set.`, {
    fix:
      `Set ${variable} in the host's environment, or pass piAgentHarness({ apiKeys: { "${model.provider}": ... } })` +
      (entryVariable === undefined ? `; a local server that needs no key takes models["${spec}"].apiKeyEnv = false.` : "."),
    details: { spec, provider: model.provider, variable },
  });
}
