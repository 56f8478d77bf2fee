import { NOT_IMPLEMENTED, subjectExport, type SubjectKitTemplate } from "../subject-kit-template.js";

export const runtimeTemplate: SubjectKitTemplate = {
  kind: "runtime",
  contract: "runtime@1",
  kit: "describeRuntimeConformance",
  file: "host",
  helper: (names) => `${names.camel}Runtime`,
  manifest: (request, names) => ({
    provides: [{ slot: "runtime", name: request.id, export: `${names.camel}Runtime`, contract: "runtime@1", conformance: { module: "./testkit", export: subjectExport(names, "runtime") } }],
  }),
  source: (_request, names) => `import type { AgentHarness } from "@assemblyline-agents/core";

export interface ${names.pascal}HostOptions {
  /** The agent folder to build and serve. */
  agentDir: string;
  /** The engine for every model spec; undefined: the agent's own routes. */
  harness?: AgentHarness;
  port?: number;
  host?: string;
}

/** A running host: its base URL and how to drain and stop it. */
export interface ${names.pascal}Host {
  url: string;
  shutdown(): Promise<void>;
}

${NOT_IMPLEMENTED("host")}
/**
 * Build the agent folder and serve it: /healthz, /readyz, the agent's channel
 * routes (a raw route answers with the run once it rests when asked ?wait=<s>),
 * and a shutdown that drains and closes the listener.
 */
export async function listen${names.pascal}Runtime(options: ${names.pascal}HostOptions): Promise<${names.pascal}Host> {
  throw notImplemented("listen${names.pascal}Runtime(" + options.agentDir + ")");
}
`,
  testkit: (_request, names) => `import type { RuntimeKitSubject } from "@assemblyline-agents/core/testkit";
import { listen${names.pascal}Runtime } from "./host.js";

/** The runtime kit's subject: one per test, booting this package's host on a free local port. */
export function ${subjectExport(names, "runtime")}(): { state: RuntimeKitSubject } {
  return { state: { start: ({ agentDir, harness }) => listen${names.pascal}Runtime({ agentDir, harness, port: 0, host: "127.0.0.1" }) } };
}
`,
  usage: (request, names) => `// gateway.ts
import { defineGateway } from "@assemblyline-agents/core";
import { ${names.camel}Runtime } from "${request.packageName}";

export default defineGateway({ runtime: ${names.camel}Runtime() });`,
  implement: (names) =>
    `Implement \`listen${names.pascal}Runtime\` in \`src/host.ts\`: build the agent folder (\`buildAgent\` and
   \`loadRuntimeBundle\` from \`@assemblyline-agents/runtime\`), serve \`/healthz\`, \`/readyz\` and the agent's
   channel routes, and stop cleanly in \`shutdown()\`. \`listenNodeRuntime\` from \`@assemblyline-agents/node\`
   is a complete example.`,
};
