/**
 * What a `plugins new --slot runtime|harness|channel|telemetry-sink` template
 * is: a package whose kit runs on a subject factory the package ships
 * (`./testkit`), because the kit needs a fake provider (a model server, a chat
 * provider, a span backend) or a host to boot. Each skeleton compiles, its
 * stubs say which file to write, and its test and `plugins verify` run the kit
 * through `./testkit`.
 */

/** What the generator needs to know about the package. */
export interface SubjectKitRequest {
  packageName: string;
  id: string;
  kernelRange: string;
  coreRange: string;
}

export interface SubjectKitTemplate {
  kind: "runtime" | "harness" | "channel" | "telemetry-sink";
  contract: string;
  /** The @assemblyline-agents/core/testkit kit. */
  kit: string;
  /** The file the author implements, under src/, without extension. */
  file: string;
  /** The export a user calls (gateway.ts, modelHarnesses, channels/<name>.ts, instrumentation.ts). */
  helper(names: Names): string;
  /** The manifest entries: provides (runtime) or the kind's own list. */
  manifest(request: SubjectKitRequest, names: Names): Record<string, unknown>;
  source(request: SubjectKitRequest, names: Names): string;
  testkit(request: SubjectKitRequest, names: Names): string;
  /** How a user wires it, for the README. */
  usage(request: SubjectKitRequest, names: Names): string;
  /** What "implement it" means, for the README. */
  implement(names: Names): string;
}

/** The package's id in the casings the generated code uses: "acme-store" -> AcmeStore, acmeStore. */
export interface Names {
  pascal: string;
  camel: string;
}

export const pascal = (id: string) => id.split("-").map((part) => part[0]!.toUpperCase() + part.slice(1)).join("");

export function subjectKitNames(id: string): Names {
  const upper = pascal(id);
  return { pascal: upper, camel: upper[0]!.toLowerCase() + upper.slice(1) };
}

/** The kit subject factory's export name, e.g. acmeStoreHarnessKitSubject. */
export const subjectExport = (names: Names, kind: string) => `${names.camel}${pascal(kind)}KitSubject`;

/** The generated helper every stub throws through, naming the file to write. */
export const NOT_IMPLEMENTED = (file: string) => `/** Replace with the real thing: until then every call says what is missing. */
function notImplemented(what: string): Error {
  return new Error(what + " is not implemented yet: write it in src/${file}.ts");
}
`;
