import { AssemblyLineError } from "@assemblyline-agents/core";
import { getApiProvider, getApiProviders, getModels, getProviders, type Api, type Model } from "@mariozechner/pi-ai";
import type { PiModelCatalog, PiModelEntry } from "./options.js";

/** pi-ai's Model requires a context window; the engine reads none (a models entry may not set it). */
const DEFAULT_CONTEXT_WINDOW = 128_000;
const DEFAULT_MAX_TOKENS = 16_384;

/** `provider/model` split at the first `/`: model ids may contain slashes (`openrouter/z-ai/glm-4.5v`). */
export function splitModelSpec(spec: string): { provider: string; modelId: string } | undefined {
  const slash = spec.indexOf("/");
  if (slash <= 0 || slash === spec.length - 1) return undefined;
  return { provider: spec.slice(0, slash), modelId: spec.slice(slash + 1) };
}

/**
 * The pi-ai model a `provider/model` spec names: pi-ai's catalog entry merged with
 * the host's `models` entry, or the host's entry alone. Pure and synchronous so the
 * compiler can call it at build time for a static model.
 */
export function resolvePiModel(spec: string, models: PiModelCatalog = {}): Model<Api> {
  const parts = splitModelSpec(spec);
  if (!parts) {
    throw new AssemblyLineError("AL_ERR_MODEL_UNKNOWN", `Model spec "${spec}" is not of the form provider/model.`, {
      fix: 'Write the model as "<provider>/<model>", e.g. "openai/gpt-5.4-mini" or "anthropic/claude-sonnet-4-5".',
      details: { spec },
    });
  }
  const entry = models[spec];
  const known = catalogModel(parts.provider, parts.modelId);
  if (!known && !entry) throw unknownModel(spec, parts.provider, parts.modelId);
  const model = known ? mergeEntry(known, entry) : newModel(spec, parts, entry!);
  if (!getApiProvider(model.api)) {
    const apis = getApiProviders().map((p) => p.api).join(", ");
    throw new AssemblyLineError("AL_ERR_MODEL_UNKNOWN", `Model "${spec}" uses api "${model.api}", which pi-ai does not implement.`, {
      fix: `Set models["${spec}"].api to one of: ${apis}.`,
      details: { spec, api: model.api },
    });
  }
  return model;
}

function catalogModel(provider: string, modelId: string): Model<Api> | undefined {
  return getModels(provider as never).find((m) => m.id === modelId) as Model<Api> | undefined;
}

function mergeEntry(known: Model<Api>, entry: PiModelEntry | undefined): Model<Api> {
  // A copy: the catalog object is pi-ai's registry entry, shared by every caller.
  if (!entry) return { ...known };
  const { apiKeyEnv: _apiKeyEnv, cost, ...fields } = entry;
  return { ...known, ...definedFields(fields), cost: { ...known.cost, ...definedFields(cost ?? {}) } } as Model<Api>;
}

function newModel(spec: string, parts: { provider: string; modelId: string }, entry: PiModelEntry): Model<Api> {
  const missing = (["api", "baseUrl"] as const).filter((key) => !entry[key]);
  if (missing.length > 0) {
    throw new AssemblyLineError(
      "AL_ERR_MODEL_UNKNOWN",
      `models["${spec}"] is not in pi-ai's catalog, so it must set ${missing.join(" and ")}.`,
      {
        fix: `Add ${missing.map((k) => (k === "api" ? 'api: "openai-completions"' : 'baseUrl: "http://127.0.0.1:11434/v1"')).join(", ")} (or the values of your server) to models["${spec}"].`,
        details: { spec, missing },
      },
    );
  }
  const { apiKeyEnv: _apiKeyEnv, cost, ...fields } = entry;
  return {
    id: parts.modelId,
    name: spec,
    provider: parts.provider,
    reasoning: false,
    input: ["text"],
    contextWindow: DEFAULT_CONTEXT_WINDOW,
    maxTokens: DEFAULT_MAX_TOKENS,
    ...definedFields(fields),
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...definedFields(cost ?? {}) },
  } as Model<Api>;
}

/** An explicit `undefined` in a host entry means "not set", not "erase the catalog value". */
function definedFields<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}

function unknownModel(spec: string, provider: string, modelId: string): AssemblyLineError {
  const providers = getProviders() as string[];
  if (!providers.includes(provider)) {
    return new AssemblyLineError("AL_ERR_MODEL_UNKNOWN", `Model "${spec}": pi-ai knows no provider "${provider}".`, {
      fix: `Use one of pi-ai's providers (${providers.join(", ")}), or declare the model: piAgentHarness({ models: { "${spec}": { api: "openai-completions", baseUrl: "http://..." } } }).`,
      details: { spec, provider },
    });
  }
  const siblings = getModels(provider as never) as Model<Api>[];
  const suggestions = closestIds(modelId, siblings.map((m) => m.id), 5).map((id) => `${provider}/${id}`);
  const sample = siblings[0];
  const declare = sample ? `{ api: "${sample.api}", baseUrl: "${sample.baseUrl}" }` : `{ api: "...", baseUrl: "..." }`;
  return new AssemblyLineError("AL_ERR_MODEL_UNKNOWN", `Model "${spec}": pi-ai's catalog has no model "${modelId}" for provider "${provider}".`, {
    fix: `Check the spelling (closest: ${suggestions.join(", ")}), or declare it: piAgentHarness({ models: { "${spec}": ${declare} } }).`,
    details: { spec, provider, modelId, suggestions },
  });
}

/** Catalog ids sharing the most name parts with `wanted`, then the longest common prefix. */
function closestIds(wanted: string, ids: string[], count: number): string[] {
  const parts = new Set(wanted.toLowerCase().split(/[-.:/_]/));
  const score = (id: string): [number, number] => {
    const shared = id.toLowerCase().split(/[-.:/_]/).filter((part) => parts.has(part)).length;
    let prefix = 0;
    while (prefix < Math.min(id.length, wanted.length) && id[prefix] === wanted[prefix]) prefix += 1;
    return [shared, prefix];
  };
  return ids
    .map((id) => ({ id, rank: score(id) }))
    .sort((a, b) => b.rank[0] - a.rank[0] || b.rank[1] - a.rank[1])
    .slice(0, count)
    .map((entry) => entry.id);
}

/**
 * The output cap a request sends: the host entry's `maxTokens`, or for a model the host declared
 * (not in pi-ai's catalog) its default. A catalog model the host did not cap keeps pi-ai's choice.
 */
export function requestMaxTokens(spec: string, models: PiModelCatalog = {}): number | undefined {
  const entry = models[spec];
  if (!entry) return undefined;
  if (entry.maxTokens !== undefined) return entry.maxTokens;
  const parts = splitModelSpec(spec);
  return parts && catalogModel(parts.provider, parts.modelId) ? undefined : DEFAULT_MAX_TOKENS;
}
