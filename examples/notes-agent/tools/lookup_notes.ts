import { defineTool } from "@assemblyline-agents/core";

interface Lookup {
  query: string;
  matches: string[];
  scanned: number;
  scannedPaths: string[];
}

export default defineTool({
  description: "Find recorded notes that contain the query text.",
  inputSchema: {
    type: "object",
    properties: { query: { type: "string" } },
    required: ["query"],
    additionalProperties: false,
  },
  async execute(input: { query: string }, ctx): Promise<Lookup> {
    // A durable step: a resumed or retried run reuses this scan instead of repeating it.
    const notes = await ctx.step(
      `scan-notes:${input.query}`,
      async () => {
        const paths = (await ctx.memory?.list({ prefix: "notes/" })) ?? [];
        const contents = await Promise.all(paths.map(async (path) => ({ path, text: (await ctx.memory?.read({ path })) ?? "" })));
        return contents;
      },
      { metadata: { query: input.query } },
    );
    const needle = input.query.toLowerCase();
    return {
      query: input.query,
      matches: notes.filter((note) => note.text.toLowerCase().includes(needle)).map((note) => note.text),
      scanned: notes.length,
      scannedPaths: notes.map((note) => note.path),
    };
  },
  // The model sees the matches only; the scan details stay in the persisted result.
  toModelOutput(output: Lookup) {
    return { query: output.query, matches: output.matches };
  },
});
