// A user writing tools needs only core: its published types must compile without @types/node (skipLibCheck off).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, expect, it } from "vitest";

const core = fileURLToPath(new URL("..", import.meta.url));
const app = mkdtempSync(join(tmpdir(), "al-core-types-"));
afterAll(() => rmSync(app, { recursive: true, force: true }));

it("type-checks a user file importing @assemblyline-agents/core with no @types/node installed: core's types name no node: module", () => {
  mkdirSync(join(app, "node_modules/@assemblyline-agents"), { recursive: true });
  symlinkSync(core, join(app, "node_modules/@assemblyline-agents/core"), "dir");
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  const file = join(app, "tool.ts");
  writeFileSync(
    file,
    `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "d", inputSchema: { type: "object", properties: {} }, async execute() { return { ok: true }; } });\n`,
  );
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    types: [],
  });
  const errors = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? d.file.fileName.replace(/.*node_modules\//, "") : ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
  expect(errors).toEqual([]);
});
