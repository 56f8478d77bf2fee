import { AssemblyLineError, isSkillName, skillFilePathProblem, type SelfImprovementApi, type SkillDraft, type SkillSummary } from "@assemblyline-agents/core";
import { frontMatter, parseFrontMatter } from "./front-matter.js";
import type { SkillLibrary, SkillView, SkillWriteGate, SkillWriteResult } from "./skill-library.js";
import { durableSkillChange, type SkillChangeSteps } from "./durable-skill-change.js";

/**
 * `ctx.selfImprovement` over one run's skill library. Every change goes through
 * the same compare-and-set writes as the file tools, and `changed` records it
 * (a `skill.changed` event with the before/after digests).
 */
export function createSelfImprovementApi(library: SkillLibrary, changed: (change: SkillWriteResult) => Promise<void>, gate?: SkillWriteGate, journal?: SkillChangeSteps): SelfImprovementApi {
  const summary = (skill: SkillView): SkillSummary => ({
    name: skill.name,
    description: skill.description,
    tools: skill.tools,
    body: skill.body,
    files: skill.files,
    digest: skill.digest,
    changedBy: skill.changedBy,
    conflict: skill.conflict,
  });
  /** Make the change and record it: journaled in the tool call's steps when there are any (durable-skill-change.ts). */
  const report = async (name: string, apply: () => Promise<SkillWriteResult>) => {
    const change = await durableSkillChange(journal, library, { name, path: "SKILL.md" }, apply, changed);
    return { name: change.name, before: change.before, after: change.after };
  };
  return {
    async list() {
      return (await library.list()).map(summary);
    },
    async get(name) {
      const skill = await library.get(name);
      return skill ? summary(skill) : undefined;
    },
    async create(draft) {
      checkDraft(draft, "create");
      const skillFile = composeSkillFile(draft.description, draft.body, draft.tools);
      return report(draft.name, () => library.putFiles(draft.name, () => ({ ...(draft.files ?? {}), "SKILL.md": skillFile }), "agent", false, gate));
    },
    async update(change) {
      checkDraft(change, "update");
      return report(change.name, () =>
        library.putFiles(
          change.name,
          (current) => {
            const existing = parseFrontMatter((current ?? {})["SKILL.md"] ?? "");
            const data = existing.data as { description?: string; tools?: string[] };
            // The file's other front-matter keys (license, metadata, ...) stay as they were.
            const skillFile = composeSkillFile(change.description ?? data.description ?? "", change.body ?? existing.content.replace(/^\n+/, ""), change.tools ?? data.tools, existing.data);
            return { ...(current ?? {}), ...(change.files ?? {}), "SKILL.md": skillFile };
          },
          "agent",
          true,
          gate,
        ),
      );
    },
    async delete(name) {
      return report(name, () => library.deleteFile(name, "SKILL.md", gate));
    },
  };
}

/**
 * SKILL.md from its parts: YAML front matter written by gray-matter (`base`'s other keys kept),
 * then the procedure as it is. The body is appended, not handed to gray-matter, which would read
 * a body starting with its own `---` block as more front matter and drop or merge it.
 */
export function composeSkillFile(description: string, body: string, tools: string[] | undefined, base: Record<string, unknown> = {}): string {
  const data: Record<string, unknown> = { ...base, description };
  if (tools?.length) data.tools = tools;
  else delete data.tools;
  return frontMatter().stringify("", data) + (body.endsWith("\n") ? body : `${body}\n`);
}

const DRAFT_FIELDS = ["name", "description", "body", "tools", "files"];

/** A draft's fields as the types say: a field nothing reads (`descripton`, `resources`) is refused, never dropped. */
function checkDraft(draft: Partial<SkillDraft>, action: "create" | "update"): void {
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `selfImprovement.${action}: ${problem}`, { fix });
  };
  if (typeof draft !== "object" || draft === null) refuse("the draft must be an object", "Pass { name, description, body, tools?, files? }.");
  const unknown = Object.keys(draft).filter((key) => !DRAFT_FIELDS.includes(key));
  if (unknown.length > 0) refuse(`unknown field${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`, `Use only ${DRAFT_FIELDS.join(", ")}; resource files go in files: { "references/x.md": "..." }.`);
  for (const field of ["description", "body"] as const) {
    const value: unknown = draft[field];
    if ((action === "create" || value !== undefined) && typeof value !== "string") refuse(`${field} must be a string`, `Give the skill's ${field} as text.`);
  }
  if (draft.tools !== undefined && !(Array.isArray(draft.tools) && draft.tools.every((tool) => typeof tool === "string"))) refuse("tools must be a list of tool names", 'Pass tools: ["read", "bash"], or leave it out.');
  // Checked here, not left to the store: a string or a list would be spread into files "0", "1", ...
  const files: unknown = draft.files;
  const filesFix = 'Pass files: { "references/x.md": "..." } (resource path to its text), or leave it out.';
  if (files !== undefined && (typeof files !== "object" || files === null || Array.isArray(files))) refuse(`files must be an object of resource paths, not ${describe(files)}`, filesFix);
  for (const [path, text] of Object.entries(files ?? {})) {
    if (typeof text !== "string") refuse(`files[${JSON.stringify(path)}] must be text, not ${describe(text)}`, filesFix);
  }
  checkName(draft.name, draft.files);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function checkName(name: unknown, files: Record<string, string> | undefined): void {
  if (typeof name !== "string" || !isSkillName(name)) {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `skill name ${JSON.stringify(name)} is not valid`, { fix: "Use lower-case letters, digits, '.', '_' or '-'." });
  }
  for (const path of Object.keys(files ?? {})) {
    const problem = path === "SKILL.md" ? "SKILL.md comes from description and body" : skillFilePathProblem(path);
    if (problem) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `skill file ${JSON.stringify(path)} is not a resource path: ${problem}`, {
        fix: "Give resources as relative paths inside the skill folder, parts separated by '/', with no control characters (e.g. references/style.md); SKILL.md comes from description and body.",
      });
    }
  }
}
