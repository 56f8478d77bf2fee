import { AssemblyLineError, type ToolExecutionContext } from "@assemblyline-agents/core";
import type { RuntimeFilesystem } from "./runtime-filesystem.js";

/**
 * The built-in file tools reach the runtime filesystem through this key on the
 * tool context. A wrapper that passes its `ctx` on (the documented way to wrap
 * a built-in) keeps it; it is a symbol, so it never shows in JSON or keys.
 */
export const RUNTIME_FILESYSTEM = Symbol.for("assembly-line.runtime-filesystem");

export function runtimeFilesystemOf(ctx: ToolExecutionContext): RuntimeFilesystem {
  const fs = (ctx as unknown as Record<symbol, RuntimeFilesystem | undefined>)[RUNTIME_FILESYSTEM];
  if (!fs) {
    throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", "this tool context has no runtime filesystem", {
      fix: "Call built-in file tools with the ctx your execute received.",
    });
  }
  return fs;
}
