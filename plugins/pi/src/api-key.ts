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

/**
 * pi-ai's other key variables for a provider, read when its usual one is unset.
 * pi-ai reads them from process.env only, so they are named here for a host's own `env`.
 */
const OTHER_KEY_VARIABLES: Record<string, string[]> = {
  anthropic: ["ANTHROPIC_OAUTH_TOKEN"],
  "github-copilot": ["GH_TOKEN", "GITHUB_TOKEN"],
};

/** The environment variable a provider's key is read from, as pi-ai reads it. */
export function apiKeyVariable(provider: string): string {
  return ENV_VARIABLE_EXCEPTIONS[provider] ?? `${provider.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}_API_KEY`;
}

/**
 * The key for one model call. `undefined` means the provider authenticates with
 * ambient credentials (AWS profile, Google ADC) and pi-ai should not get a key.
 * Order: host `apiKeys[provider]`, the entry's `apiKeyEnv`, the provider's usual variable,
 * then the other credentials pi-ai reads for the provider. Variables are read from the
 * `env` option (the host's environment), else process.env.
 */
export function resolvePiApiKey(spec: string, model: Model<Api>, options: PiHarnessOptions): string | undefined {
  const hostKey = options.apiKeys?.[model.provider];
  if (hostKey) return hostKey;

  const entryVariable = options.models?.[spec]?.apiKeyEnv;
  if (entryVariable === false) return NO_API_KEY;
  const variable = entryVariable ?? apiKeyVariable(model.provider);
  // The declared variable first: pi-ai prefers others (ANTHROPIC_OAUTH_TOKEN, which also makes its requests
  // pose as Claude Code; GH_TOKEN for github-copilot) and is asked only when it is unset.
  const env = options.env ?? process.env;
  const fromEnv = entryVariable ? env[entryVariable] : env[variable] || otherCredential(model.provider, env);
  if (fromEnv === AMBIENT_CREDENTIALS) return undefined;
  if (fromEnv) return fromEnv;

  throw new AssemblyLineError("AL_ERR_MODEL_API_KEY", `No API key for ${spec}: ${variable} is not set.`, {
    fix:
      `Set ${variable} in the host's environment, or pass piAgentHarness({ apiKeys: { "${model.provider}": ... } })` +
      (entryVariable === undefined ? `; a local server that needs no key takes models["${spec}"].apiKeyEnv = false.` : "."),
    details: { spec, provider: model.provider, variable },
  });
}

/*
 * What pi-ai would use when the provider's usual variable is unset. From a host's own
 * `env`, its other key variables; ambient credentials (an AWS profile, Google ADC) only
 * as pi-ai sees them, since the provider's SDK finds them in process.env by itself.
 */
function otherCredential(provider: string, env: Record<string, string | undefined>): string | undefined {
  if (env === process.env) return getEnvApiKey(provider);
  const other = OTHER_KEY_VARIABLES[provider]?.map((name) => env[name]).find(Boolean);
  if (other) return other;
  return getEnvApiKey(provider) === AMBIENT_CREDENTIALS ? AMBIENT_CREDENTIALS : undefined;
}
