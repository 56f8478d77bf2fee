import type { StateFacetName } from "@assemblyline-agents/core";
import type { SlotTemplate } from "./slot-templates.js";

export interface ScaffoldRequest {
  /** The npm package name, e.g. "@acme/assembly-line-s3" or "my-blob". */
  packageName: string;
  /** The manifest id, kebab-case. */
  id: string;
  template: SlotTemplate;
  facets: readonly StateFacetName[];
  /** e.g. "^0.1.0": the kernel range the manifest declares. */
  kernelRange: string;
  /** e.g. "^0.1.0": the @assemblyline-agents/core range (peer and dev). */
  coreRange: string;
}

const pascal = (id: string) => id.split("-").map((part) => part[0]!.toUpperCase() + part.slice(1)).join("");
const camel = (id: string) => pascal(id)[0]!.toLowerCase() + pascal(id).slice(1);

export interface ScaffoldNames {
  className: string;
  optionsType: string;
  helper: string;
}

export function scaffoldNames(request: ScaffoldRequest): ScaffoldNames {
  const className = `${pascal(request.id)}${request.template.classSuffix}`;
  return { className, optionsType: `${className}Options`, helper: `${camel(request.id)}${pascal(request.template.slot)}` };
}

/** Every file of the new package, path -> text. */
export function pluginFiles(request: ScaffoldRequest): Record<string, string> {
  const names = scaffoldNames(request);
  return {
    "package.json": packageJson(request, names),
    "tsconfig.json": `${JSON.stringify(TSCONFIG, null, 2)}\n`,
    "config.schema.json": `${JSON.stringify(CONFIG_SCHEMA, null, 2)}\n`,
    ".gitignore": "node_modules/\ndist/\n*.tgz\n",
    "src/index.ts": indexSource(request, names),
    [`src/${request.template.file}.ts`]: adapterSource(request, names),
    "test/conformance.test.ts": testSource(request, names),
    "README.md": readme(request, names),
  };
}

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    lib: ["ES2023"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    declaration: true,
    sourceMap: true,
    skipLibCheck: true,
    types: ["node"],
    rootDir: "src",
    outDir: "dist",
  },
  include: ["src"],
};

const CONFIG_SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  description: "The options gateway.ts passes to this plugin's adapter; the host checks them at boot.",
  type: "object",
  additionalProperties: false,
  properties: {},
};

function packageJson(request: ScaffoldRequest, names: ScaffoldNames): string {
  const { template } = request;
  return `${JSON.stringify(
    {
      name: request.packageName,
      version: "0.1.0",
      description: `A ${template.slot} adapter for Assembly Line.`,
      type: "module",
      license: "MIT",
      engines: { node: ">=20.19" },
      main: "./dist/index.js",
      types: "./dist/index.d.ts",
      exports: { ".": { types: "./dist/index.d.ts", default: "./dist/index.js" } },
      files: ["dist", "src", "config.schema.json"],
      scripts: {
        build: "tsc -p .",
        prepack: "tsc -p .",
        test: "vitest run",
        // Named by package: a bare `npx assembly-line` would fetch whatever npm calls "assembly-line".
        verify: `npx -p @assemblyline-agents/node@${request.kernelRange} assembly-line plugins verify .`,
      },
      peerDependencies: { "@assemblyline-agents/core": request.coreRange },
      devDependencies: {
        "@assemblyline-agents/core": request.coreRange,
        // The scheduler kit's schedule store comes from the kernel's in-memory state.
        ...(template.subjectNeedsSchedules ? { "@assemblyline-agents/runtime": request.kernelRange } : {}),
        "@types/node": "^20.19.0",
        typescript: "~5.9.3",
        vitest: "^4.1.0",
      },
      publishConfig: { access: "public" },
      assemblyLine: {
        manifestVersion: 1,
        id: request.id,
        kernel: request.kernelRange,
        provides: [
          {
            slot: template.slot,
            name: request.id,
            export: names.helper,
            contract: template.contract,
            ...(template.slot === "state" ? { facets: request.facets } : {}),
          },
        ],
        env: [],
        configSchema: "./config.schema.json",
      },
    },
    null,
    2,
  )}\n`;
}

function indexSource(request: ScaffoldRequest, names: ScaffoldNames): string {
  const { slot, file, subjectNeedsSchedules } = request.template;
  const coreImports = ["adapterDescriptor", "definePlugin", ...(subjectNeedsSchedules ? ["isScheduleStateStore"] : []), "type AdapterDescriptor"];
  const construct = subjectNeedsSchedules
    ? `new ${names.className}(descriptor.options as ${names.optionsType}, isScheduleStateStore(context.state) ? context.state : undefined)`
    : `new ${names.className}(descriptor.options as ${names.optionsType})`;
  return `import { readFileSync } from "node:fs";
import { ${coreImports.join(", ")} } from "@assemblyline-agents/core";
import { ${names.className}, type ${names.optionsType} } from "./${file}.js";

export { ${names.className}, type ${names.optionsType} } from "./${file}.js";

/** The manifest id (package.json assemblyLine.id); descriptors name it in \`plugin\`. */
const ID = "${request.id}";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

/** \`${slot}: ${names.helper}()\` in gateway.ts: records the options; the factory below runs at boot. */
export function ${names.helper}(options: ${names.optionsType} = {}): AdapterDescriptor<"${slot}", ${names.optionsType}> {
  return adapterDescriptor("${slot}", ID, options);
}

/** What the kernel applies: materializes this package's ${slot} descriptors, passes on any other. */
export const plugin = definePlugin({
  name: ID,
  version,
  apply(kernel) {
    kernel.hooks.slot.for("${slot}").tapPromise({ name: ID }, async (descriptor, context) => {
      if (descriptor.plugin !== ID) return undefined;
      // Read settings from context.env and resolve paths against context.agentDir;
      // open connections here, so a bad setting fails the boot and not the first run.${subjectNeedsSchedules ? "\n      // context.state is the gateway's state adapter: the schedules live there." : ""}
      return ${construct};
    });
  },
});
`;
}

function adapterSource(request: ScaffoldRequest, names: ScaffoldNames): string {
  const interfaces = request.template.interfaces(request.facets);
  const types = interfaces.map((entry) => entry.type);
  const needsSchedules = request.template.subjectNeedsSchedules === true;
  const methods = interfaces.flatMap((entry) =>
    entry.methods.map(
      (method) => `
  ${method}(...args: Parameters<${entry.type}["${method}"]>): ReturnType<${entry.type}["${method}"]> {
    return Promise.reject(notImplemented("${method}"));
  }`,
    ),
  );
  return `import type { ${[...types, ...(needsSchedules ? ["ScheduleStateStore"] : [])].join(", ")} } from "@assemblyline-agents/core";

/** The options gateway.ts passes (describe each one in config.schema.json too). */
export interface ${names.optionsType} {}

/** Replace with the real thing: until then every call says which method is missing. */
function notImplemented(method: string): Error {
  return new Error(\`${names.className}.\${method} is not implemented yet: write it in src/${request.template.file}.ts\`);
}

/**
 * The ${request.template.slot} adapter (${request.template.contract}). Each method's contract is in the
 * doc comment of its @assemblyline-agents/core type; test/conformance.test.ts runs the kit.
 */
export class ${names.className} implements ${types.join(", ")} {
${request.template.named ? `  readonly name = "${request.id}";\n\n` : ""}  constructor(
    readonly options: ${names.optionsType} = {},${needsSchedules ? "\n    /** Where the due schedules are: claim them with claimDueSchedules, finish each with completeScheduleRun. */\n    readonly schedules?: ScheduleStateStore," : ""}
  ) {}

  /** Release connections and files; the host calls it at shutdown. */
  async close(): Promise<void> {}
${methods.join("\n")}
}
`;
}

function testSource(request: ScaffoldRequest, names: ScaffoldNames): string {
  const { kit, contract } = request.template;
  if (!kit) {
    return `import { missingContractMethods } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { ${names.className} } from "../src/index.js";

// ${contract} has no conformance kit in @assemblyline-agents/core/testkit yet: check the
// methods here and add behaviour tests of your own.
describe("${names.className}", () => {
  it("has every method of ${contract}", () => {
    expect(missingContractMethods(new ${names.className}(), "${contract}")).toEqual([]);
  });
});
`;
  }
  if (request.template.subjectNeedsSchedules) {
    return `import { ${kit.name} } from "@assemblyline-agents/core/testkit";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { ${names.className} } from "../src/index.js";

// One fresh scheduler per test, with the schedule store it reads.
${kit.name}("${names.className}", async () => {
  const schedules = new InMemoryStateAdapter();
  const scheduler = new ${names.className}({}, schedules);
  return { state: { scheduler, schedules }, cleanup: () => scheduler.close() };
});
`;
  }
  return `import { ${kit.name} } from "@assemblyline-agents/core/testkit";
import { ${names.className} } from "../src/index.js";

// One fresh, empty adapter per test, and how to dispose of it.
${kit.name}("${names.className}", async () => {
  const adapter = new ${names.className}();
  return { state: adapter, cleanup: () => adapter.close() };
}${kit.extraArgs(request.facets)});
`;
}

function readme(request: ScaffoldRequest, names: ScaffoldNames): string {
  const { slot, contract, file, kit } = request.template;
  return `# ${request.packageName}

A \`${slot}\` adapter for [Assembly Line](https://www.npmjs.com/package/@assemblyline-agents/node)
(plugin id \`${request.id}\`, contract \`${contract}\`).

\`\`\`ts
// gateway.ts
import { defineGateway } from "@assemblyline-agents/core";
import { ${names.helper} } from "${request.packageName}";

export default defineGateway({ ${slot}: ${names.helper}() });
\`\`\`

## Write it

1. \`npm install\`
2. Implement every method of \`${names.className}\` in \`src/${file}.ts\`; each one now
   rejects with "not implemented yet". Declare its options in \`${names.optionsType}\`
   and in \`config.schema.json\`, and any environment variable it reads in
   \`package.json\` \`assemblyLine.env\`.
3. \`npm run build && npm test\`: ${kit ? `the \`${kit.name}\` conformance kit` : `the method check (${contract} has no conformance kit yet)`}.
4. \`npm run verify\` (\`npx -p @assemblyline-agents/node assembly-line plugins verify .\`):
   the checks a host runs when it loads the package, then the kit against the
   adapter your \`plugin\` materializes.
5. \`npm publish\`, then list it in the registry with a pull request adding it to
   \`registry/index.json\` (see the Assembly Line docs, "Listing a plugin").
`;
}
