import { approvalRequired, defineTool } from "@assemblyline-agents/core";

export default defineTool({
  description: "Record a durable note the user asked you to remember.",
  inputSchema: {
    type: "object",
    properties: { note: { type: "string", minLength: 1 } },
    required: ["note"],
    additionalProperties: false,
  },
  needsApproval: approvalRequired("Recording a note is a durable side effect.", "idempotent"),
  async execute(input: { note: string }, ctx) {
    // Keyed by the idempotency key: a retried call overwrites the same note instead of adding a second.
    const key = ctx.idempotencyKey("record-note");
    await ctx.memory?.write({ path: `notes/${key}.txt`, content: input.note });
    await ctx.emit("note.recorded", { note: input.note, idempotencyKey: key });
    return { recorded: true, key };
  },
});
