import { isApprovalPolicy, isSideEffect, type ToolDefinition } from "@assemblyline-agents/core";

/**
 * What is wrong with a tool's approval gate and side effect, or null. A value the types do not
 * allow (a tool written in JavaScript, `needsApproval: { reason }` without approvalRequired) would
 * otherwise read as "no approval" and run the tool ungated.
 */
export function approvalProblem(definition: Pick<ToolDefinition, "needsApproval" | "sideEffect">): string | null {
  const gate: unknown = definition.needsApproval;
  if (gate !== undefined && typeof gate !== "boolean" && !isApprovalPolicy(gate)) {
    return `needsApproval is ${describe(gate)}; it must be true, false or approvalRequired("why", sideEffect)`;
  }
  if (isApprovalPolicy(gate) && !isSideEffect(gate.sideEffect)) return `needsApproval's sideEffect is ${describe(gate.sideEffect)}; it must be "none", "idempotent" or "external"`;
  const sideEffect: unknown = definition.sideEffect;
  if (sideEffect !== undefined && !isSideEffect(sideEffect)) return `sideEffect is ${describe(sideEffect)}; it must be "none", "idempotent" or "external"`;
  // The approval records the gate's class, tool_describe and audits the tool's: one tool, one class.
  if (isApprovalPolicy(gate) && sideEffect !== undefined && gate.sideEffect !== sideEffect) {
    return `sideEffect is "${String(sideEffect)}" but needsApproval's approvalRequired records "${gate.sideEffect}" (its default when left out is "external"); write approvalRequired("why", "${String(sideEffect)}"), or leave sideEffect out`;
  }
  return null;
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null) return Array.isArray(value) ? "an array" : "a plain object";
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
