import { AssemblyLineError, isSkillFilePath, isSkillName, type SelfImprovementApi, type SkillSummary } from "@assemblyline-agents/core";
import { frontMatter, parseFrontMatter } from "./front-matter.js";
import type { SkillLibrary, SkillView, SkillWriteGate, SkillWriteResult } from "./skill-library.js";

/**
 * `ctx.selfImprovement` over one run's skill library. Every change goes through
 * the same compare-and-set writes as the file tools, and `changed` records it
 * (a `skill.changed` event with the before/after digests).
 */
export function createSelfImprovementApi(library: SkillLibrary, changed: (change: SkillWriteResult) => Promise<void>, gate?: SkillWriteGate): SelfImprovementApi {
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
  const report = async (change: SkillWriteResult) => {
    if (change.before !== change.after) await changed(change);
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
      checkDraft(draft.name, draft.files);
      const skillFile = composeSkillFile(draft.description, draft.body, draft.tools);
      return report(await library.putFiles(draft.name, () => ({ ...(draft.files ?? {}), "SKILL.md": skillFile }), "agent", false, gate));
    },
    async update(change) {
      checkDraft(change.name, change.files);
      return report(
        await library.putFiles(
          change.name,
          (current) => {
            const existing = parseFrontMatter((current ?? {})["SKILL.md"] ?? "");
            const data = existing.data as { description?: string; tools?: string[] };
            const skillFile = composeSkillFile(change.description ?? data.description ?? "", change.body ?? existing.content.replace(/^\n+/, ""), change.tools ?? data.tools);
            return { ...(current ?? {}), ...(change.files ?? {}), "SKILL.md": skillFile };
          },
          "agent",
          true,
          gate,
        ),
      );
    },
    async delete(name) {
      return report(await library.deleteFile(name, "SKILL.md", gate));
    },
  };
}

/** SKILL.md from its parts: YAML front matter written by gray-matter, then the procedure. */
export function composeSkillFile(description: string, body: string, tools: string[] | undefined): string {
  const data: Record<string, unknown> = { description };
  if (tools?.length) data.tools = tools;
  return frontMatter().stringify(body.endsWith("\n") ? body : `${body}\n`, data);
}

function checkDraft(name: unknown, files: Record<string, string> | undefined): void {
  if (typeof name !== "string" || !isSkillName(name)) {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `skill name ${JSON.stringify(name)} is not valid`, { fix: "Use lower-case letters, digits, '.', '_' or '-'." });
  }
  for (const path of Object.keys(files ?? {})) {
    if (path === "SKILL.md" || !isSkillFilePath(path)) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `skill file ${JSON.stringify(path)} is not a resource path`, {
        fix: "Give resources as relative paths inside the skill folder (e.g. references/style.md); SKILL.md comes from description and body.",
      });
    }
  }
}
