import { AssemblyLineError, defineTool, type ToolExecutionContext } from "@assemblyline-agents/core";

/**
 * The filesystem and shell built-ins. Their executors need the runtime filesystem
 * (a sandbox for `/workspace`); the runtime offers them to the model only when a
 * sandbox adapter is configured.
 */
const pathProperty = { type: "string", description: "Absolute logical path, e.g. /workspace/report.txt" } as const;

async function workspace(ctx: ToolExecutionContext, path: string) {
  if (!path.startsWith("/workspace")) {
    throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `path ${path} is outside /workspace`, {
      fix: "Use a path under /workspace for files the agent writes.",
    });
  }
  return ctx.getSandbox();
}

export const readTool = defineTool<{ path: string }, { path: string; content: string }>({
  description: "Read a text file from the runtime filesystem.",
  inputSchema: { type: "object", properties: { path: pathProperty }, required: ["path"], additionalProperties: false },
  sideEffect: "none",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await workspace(ctx, input.path);
    return { path: input.path, content: new TextDecoder().decode(await sandbox.readFile(input.path)) };
  },
});

export const writeTool = defineTool<{ path: string; content: string }, { path: string; bytes: number }>({
  description: "Write a text file in /workspace, creating or replacing it.",
  inputSchema: {
    type: "object",
    properties: { path: pathProperty, content: { type: "string" } },
    required: ["path", "content"],
    additionalProperties: false,
  },
  sideEffect: "idempotent",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await workspace(ctx, input.path);
    await sandbox.writeFile(input.path, input.content);
    return { path: input.path, bytes: Buffer.byteLength(input.content) };
  },
});

export const editTool = defineTool<{ path: string; oldText: string; newText: string }, { path: string; replaced: number }>({
  description: "Replace one exact occurrence of oldText with newText in a /workspace file.",
  inputSchema: {
    type: "object",
    properties: { path: pathProperty, oldText: { type: "string", minLength: 1 }, newText: { type: "string" } },
    required: ["path", "oldText", "newText"],
    additionalProperties: false,
  },
  sideEffect: "idempotent",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await workspace(ctx, input.path);
    const text = new TextDecoder().decode(await sandbox.readFile(input.path));
    const count = text.split(input.oldText).length - 1;
    if (count !== 1) return { path: input.path, replaced: 0, error: `oldText occurs ${count} times; it must occur exactly once` } as never;
    await sandbox.writeFile(input.path, text.replace(input.oldText, input.newText));
    return { path: input.path, replaced: 1 };
  },
});

export const deleteTool = defineTool<{ path: string }, { path: string; deleted: boolean }>({
  description: "Delete a file in /workspace.",
  inputSchema: { type: "object", properties: { path: pathProperty }, required: ["path"], additionalProperties: false },
  sideEffect: "idempotent",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await workspace(ctx, input.path);
    await sandbox.deleteFile(input.path);
    return { path: input.path, deleted: true };
  },
});

export const listTool = defineTool<{ path: string }, { entries: Array<{ path: string; type: string; size: number }> }>({
  description: "List the files under a directory of the runtime filesystem.",
  inputSchema: { type: "object", properties: { path: pathProperty }, required: ["path"], additionalProperties: false },
  sideEffect: "none",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await workspace(ctx, input.path);
    return { entries: await sandbox.listFiles(input.path) };
  },
});

export const grepTool = defineTool<{ pattern: string; path: string }, { matches: string[] }>({
  description: "Search files under a directory for a regular expression; returns path:line:text matches.",
  inputSchema: {
    type: "object",
    properties: { pattern: { type: "string", minLength: 1 }, path: pathProperty },
    required: ["pattern", "path"],
    additionalProperties: false,
  },
  sideEffect: "none",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await workspace(ctx, input.path);
    const regex = new RegExp(input.pattern);
    const matches: string[] = [];
    for (const entry of await sandbox.listFiles(input.path)) {
      if (entry.type !== "file") continue;
      const lines = new TextDecoder().decode(await sandbox.readFile(entry.path)).split("\n");
      lines.forEach((line, index) => {
        if (regex.test(line)) matches.push(`${entry.path}:${index + 1}:${line}`);
      });
    }
    return { matches };
  },
});

export const bashTool = defineTool<{ command: string; timeoutMs?: number }, { exitCode: number; stdout: string; stderr: string; timedOut: boolean; truncated: boolean }>({
  description: "Run a shell command in the workspace (cwd /workspace). Returns exit code, stdout and stderr.",
  inputSchema: {
    type: "object",
    properties: { command: { type: "string", minLength: 1 }, timeoutMs: { type: "integer", minimum: 1, maximum: 600000 } },
    required: ["command"],
    additionalProperties: false,
  },
  sideEffect: "external",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await ctx.getSandbox();
    return sandbox.exec(input.command, { cwd: "/workspace", timeoutMs: input.timeoutMs ?? 60_000, maxOutputBytes: 64 * 1024 });
  },
});
