import type { Sandbox, ToolExecutionContext } from "@assemblyline-agents/core";
import { createRuntimeFilesystem, type InMemoryStateAdapter, type RuntimeFilesystem } from "@assemblyline-agents/runtime";

/**
 * The runtime filesystem the built-in file tools reach, over one in-memory store: /workspace is
 * `sandbox`, or refused when the test gives none; /history is `conversationId`'s.
 */
export function filesystemOver(state: InMemoryStateAdapter, options: { sandbox?: Sandbox; conversationId?: string | null } = {}): RuntimeFilesystem {
  const { sandbox } = options;
  return createRuntimeFilesystem({
    memory: state,
    files: state,
    conversations: state,
    conversationId: options.conversationId ?? null,
    blob: undefined,
    getSandbox: async () => {
      if (!sandbox) throw new Error("no sandbox in this test");
      return sandbox;
    },
    skills: { list: async () => [] } as never,
  });
}

/** A built-in tool's context (run-1, call-1) whose runtime filesystem is `fs`, with `extra` members (a step, an idempotency key). */
export function toolContextOver(fs: RuntimeFilesystem, extra: Record<string, unknown> = {}): ToolExecutionContext {
  return { runId: "run-1", toolCallId: "call-1", ...extra, [Symbol.for("assembly-line.runtime-filesystem")]: fs } as unknown as ToolExecutionContext;
}
