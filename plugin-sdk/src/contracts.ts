import type { GatewaySlot } from "./gateway.js";
import { STATE_FACET_METHODS, missingFacetMethods, type StateFacetName } from "./state/guards.js";

/** The methods each non-state contract requires of a live object. */
export const CONTRACT_METHODS = {
  "blob@1": ["put", "get", "delete", "list"],
  "sandbox@1": ["acquire", "release"],
  "scheduler@1": ["start", "stop"],
  "deploy@1": ["deploy"],
  "harness@1": ["runTurn"],
  "rate-limiter@1": ["take"],
  "telemetry@1": ["export"],
} as const satisfies Record<string, readonly string[]>;

/** Contracts a plugin may claim, by slot. */
export const SLOT_CONTRACTS: Record<GatewaySlot, string> = {
  state: "state@1",
  blob: "blob@1",
  sandbox: "sandbox@1",
  scheduler: "scheduler@1",
  deploy: "deploy@1",
  runtime: "runtime@1",
};

export interface ContractProblem {
  /** e.g. "runs.appendEvents" or "acquire". */
  missing: string[];
}

/**
 * What `live` lacks to honour `contract` (for state, the claimed `facets`).
 * Empty when it conforms. Unknown contracts report themselves as missing.
 */
export function missingContractMethods(live: unknown, contract: string, facets: readonly StateFacetName[] = ["runs"]): string[] {
  if (contract === "state@1") {
    return facets.flatMap((facet) => {
      if (!(facet in STATE_FACET_METHODS)) return [`${facet} (unknown facet)`];
      return missingFacetMethods(live, facet).map((method) => `${facet}.${method}`);
    });
  }
  if (contract === "runtime@1") return [];
  const methods = (CONTRACT_METHODS as Record<string, readonly string[]>)[contract];
  if (!methods) return [`${contract} (unknown contract)`];
  if (typeof live !== "object" || live === null) return [...methods];
  return methods.filter((method) => typeof (live as Record<string, unknown>)[method] !== "function");
}
