export { createOtlpSink, type OtlpSink, type OtlpSinkStats } from "./sink.js";
export { createOtlpSinkFromEnv, parseOtlpHeaders } from "./from-env.js";
export { encodeExportRequest } from "./encode.js";
export type { OtlpSinkOptions } from "./options.js";
