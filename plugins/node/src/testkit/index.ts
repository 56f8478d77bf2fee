/** Conformance-kit subjects this package ships, for `plugins verify` and for its own tests. */
export { nodeRuntimeKitSubject } from "./runtime-subject.js";
