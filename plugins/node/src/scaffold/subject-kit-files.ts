import { subjectExport, subjectKitNames, type SubjectKitRequest, type SubjectKitTemplate } from "./subject-kit-template.js";

/** Every file of the new package, path -> text. */
export function subjectKitFiles(request: SubjectKitRequest, template: SubjectKitTemplate, shared: { tsconfig: string; gitignore: string }): Record<string, string> {
  const names = subjectKitNames(request.id);
  const subject = subjectExport(names, template.kind);
  const isRuntime = template.kind === "runtime";
  const packageJson = {
    name: request.packageName,
    version: "0.1.0",
    description: `A ${template.kind} for Assembly Line.`,
    type: "module",
    license: "MIT",
    engines: { node: ">=20.19" },
    main: "./dist/index.js",
    types: "./dist/index.d.ts",
    exports: {
      ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
      "./testkit": { types: "./dist/testkit.d.ts", default: "./dist/testkit.js" },
    },
    files: ["dist", "src"],
    scripts: {
      build: "tsc -p .",
      prepack: "tsc -p .",
      test: "vitest run",
      verify: `npx -p @assemblyline-agents/node@${request.kernelRange} assembly-line plugins verify .`,
    },
    peerDependencies: { "@assemblyline-agents/core": request.coreRange },
    devDependencies: {
      "@assemblyline-agents/core": request.coreRange,
      ...(isRuntime ? { "@assemblyline-agents/runtime": request.kernelRange } : {}),
      "@types/node": "^20.19.0",
      typescript: "~5.9.3",
      vitest: "^4.1.0",
    },
    publishConfig: { access: "public" },
    assemblyLine: { manifestVersion: 1, id: request.id, kernel: request.kernelRange, ...template.manifest(request, names), env: [] },
  };
  const helper = template.helper(names);
  const index = isRuntime
    ? `import { readFileSync } from "node:fs";
import { adapterDescriptor, definePlugin, type AdapterDescriptor } from "@assemblyline-agents/core";

export { listen${names.pascal}Runtime, type ${names.pascal}Host, type ${names.pascal}HostOptions } from "./host.js";

/** The manifest id (package.json assemblyLine.id); descriptors name it in \`plugin\`. */
const ID = "${request.id}";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

export interface ${names.pascal}RuntimeOptions {
  port?: number;
  host?: string;
}

/** \`runtime: ${helper}()\` in gateway.ts: this package's host serves the agent. */
export function ${helper}(options: ${names.pascal}RuntimeOptions = {}): AdapterDescriptor<"runtime", ${names.pascal}RuntimeOptions> {
  return adapterDescriptor("runtime", ID, options);
}

/** The runtime slot has no methods to call: it records which host serves the agent, with its options. */
export const plugin = definePlugin({
  name: ID,
  version,
  apply(kernel) {
    kernel.hooks.slot.for("runtime").tapPromise({ name: ID }, async (descriptor) => (descriptor.plugin === ID ? { name: ID, options: descriptor.options } : undefined));
  },
});
`
    : `export * from "./${template.file}.js";\n`;
  const test = `import { ${template.kit} } from "@assemblyline-agents/core/testkit";
import { ${subject} } from "../src/testkit.js";

${template.kit}("${helper}", ${subject});
`;
  const readme = `# ${request.packageName}

A ${template.kind} for [Assembly Line](https://www.npmjs.com/package/@assemblyline-agents/node)
(plugin id \`${request.id}\`, contract \`${template.contract}\`).

\`\`\`ts
${template.usage(request, names)}
\`\`\`

## Write it

1. \`npm install\`
2. ${template.implement(names)}
3. \`npm run build && npm test\`: the \`${template.kit}\` conformance kit, on the subject
   \`${subject}\` in \`src/testkit.ts\` (shipped as \`${request.packageName}/testkit\`).
4. \`npm run verify\` (\`npx -p @assemblyline-agents/node assembly-line plugins verify .\`):
   the checks a host runs when it loads the package, then the same kit.
5. \`npm publish\`, then list it in the registry with a pull request adding it to
   \`registry/index.json\` (see the Assembly Line docs, "Listing a plugin").
`;
  return {
    "package.json": `${JSON.stringify(packageJson, null, 2)}\n`,
    "tsconfig.json": shared.tsconfig,
    ".gitignore": shared.gitignore,
    "src/index.ts": index,
    [`src/${template.file}.ts`]: template.source(request, names),
    "src/testkit.ts": template.testkit(request, names),
    "test/conformance.test.ts": test,
    "README.md": readme,
  };
}
