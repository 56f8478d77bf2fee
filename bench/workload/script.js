// The workload's model script and tool functions, shared by every system.
export const TURNS = [
  { toolCalls: [{ name: "first", input: { value: "alpha" } }] },
  { toolCalls: [{ name: "second", input: { value: "beta" } }] },
  { text: "done" },
];

/** The two tools as plain functions, for the systems that are not Assembly Line. */
export const toolFunctions = {
  first: async (input) => ({ first: input.value.length }),
  second: async (input) => ({ second: input.value.length }),
};
