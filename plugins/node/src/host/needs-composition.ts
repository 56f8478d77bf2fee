import type { RuntimeBundle } from "@assemblyline-agents/runtime";

/** Whether the agent chooses any adapter beyond the embedded defaults (and so needs the registry to compose them). */
export function needsComposition(bundle: RuntimeBundle): boolean {
  return bundle.sourceBundle.gateway !== null || (bundle.manifest.sandbox !== null && bundle.manifest.sandbox.adapter !== "local");
}
