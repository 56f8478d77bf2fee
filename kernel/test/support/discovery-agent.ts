import { MINIMAL_AGENT } from "./agent-folder.js";

/** Ten everyday tools, offered up front: each declares `capability: { visibility: "always" }`. */
export const VISIBLE_TOOLS = [
  "get_weather",
  "list_notes",
  "add_note",
  "get_time",
  "convert_units",
  "calculate",
  "translate_text",
  "summarize_text",
  "set_reminder",
  "send_message",
];

/** Thirty long-tail tools, explicitly deferred, in five namespaces. */
export const DEFERRED_NAMESPACES: Record<string, string[]> = {
  billing: ["create_invoice", "refund_payment", "list_invoices", "void_invoice", "apply_discount", "update_billing_address"],
  crm: ["find_customer", "update_customer", "merge_customers", "log_interaction", "assign_account_owner", "list_deals"],
  shipping: ["create_shipment", "track_package", "cancel_shipment", "print_label", "estimate_delivery", "list_carriers"],
  hr: ["request_leave", "approve_timesheet", "list_employees", "update_payroll", "schedule_review", "onboard_employee"],
  analytics: ["run_report", "export_dashboard", "forecast_revenue", "segment_users", "track_event", "compare_periods"],
};

export const DEFERRED_TOOLS = Object.values(DEFERRED_NAMESPACES).flat();

function words(name: string): string {
  return name.replace(/_/g, " ");
}

/** A realistic tool: two sentences of description, four typed properties. */
function toolFile(name: string, options: { capability?: string; extra?: string; execute?: string } = {}): string {
  return `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
import { appendFileSync } from "node:fs";
export default defineTool({
  description: "${words(name)[0]!.toUpperCase() + words(name).slice(1)} for the current account. Use it when the user asks to ${words(name)}; it returns the affected record and a short summary the user can read.",
  inputSchema: {
    type: "object",
    properties: {
      id: { type: "string", description: "Identifier of the record to act on." },
      amount: { type: "number", description: "Amount in the account currency, when relevant." },
      note: { type: "string", description: "Free-form note stored with the change." },
      dryRun: { type: "boolean", description: "Only report what would change." }
    },
    required: ["id"],
    additionalProperties: false
  },
  ${options.capability ?? ""}
  ${options.extra ?? ""}
  async execute(input, ctx) {
    ${options.execute ?? `return { tool: "${name}", id: input.id, summary: "${words(name)} done" };`}
  }
});
`;
}

/**
 * The discovery agent: 40 authored tools, 30 of them deferred (one needing
 * approval, which appends a line to `executionLog` each time it really runs).
 * With `discovery: false` every tool is `always`, for the prompt-size comparison.
 */
export function discoveryAgentFiles(options: { executionLog: string; discovery?: boolean }): Record<string, string> {
  const discovery = options.discovery ?? true;
  const files: Record<string, string> = { "agent.ts": MINIMAL_AGENT };
  for (const name of VISIBLE_TOOLS) files[`tools/${name}.ts`] = toolFile(name, { capability: `capability: { visibility: "always" },` });
  for (const [namespace, names] of Object.entries(DEFERRED_NAMESPACES)) {
    for (const name of names) {
      const aliases = name === "create_invoice" ? `, aliases: ["receivables"]` : "";
      const tags = name === "track_package" ? `["parcel", "delivery"]` : `["${namespace}"]`;
      const capability = `capability: { visibility: "${discovery ? "deferred" : "always"}", execution: "direct", namespace: "${namespace}", tags: ${tags}${aliases} },`;
      files[`tools/${name}.ts`] =
        name === "refund_payment"
          ? toolFile(name, {
              capability,
              extra: `needsApproval: approvalRequired("Refunds move money.", "external"),`,
              execute: `appendFileSync(${JSON.stringify(options.executionLog)}, ctx.toolCallId + "\\n");
    return { refunded: input.amount, id: input.id, idempotencyKey: ctx.idempotencyKey("refund") };`,
            })
          : toolFile(name, { capability });
    }
  }
  return files;
}
