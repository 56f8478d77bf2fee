import { AssemblyLineError, MAX_TIMER_MS, isTimerDelay, quotedUrl } from "@assemblyline-agents/core";

/** Options a gateway.ts helper carries: plain data, never a secret (keys come from env). */
export interface S3BlobOptions {
  /** The bucket; default: the first set variable of `bucketEnv`. */
  bucket?: string;
  /** An S3-compatible endpoint (R2, MinIO, s3rver); default: the first set variable of `endpointEnv`, else AWS's own. */
  endpoint?: string;
  /** Default: `$AWS_REGION` (an empty one counts as unset), else `us-east-1` (R2: `auto`). */
  region?: string;
  /** Path-style URLs (`endpoint/bucket/key`), which most S3-compatible servers need. Default: true with an endpoint. */
  forcePathStyle?: boolean;
  /** Every key is stored under this prefix, which ends with "/" (e.g. `agents/support/`); list() returns keys without it. */
  prefix?: string;
  /** A request that sends or receives nothing for this long fails (each of the SDK's 3 attempts). Default 30 s. */
  requestTimeoutMs?: number;
  /** Objects at least this large are sent as a multipart upload. Default 8 MiB. */
  multipartThresholdBytes?: number;
  /** Part size of a multipart upload (S3's minimum is 5 MiB). Default 8 MiB. */
  partSizeBytes?: number;
  /** Variables tried in order for the bucket. */
  bucketEnv?: string[];
  /** Variables for the access key id / secret, read in pairs by position (the first pair set wins); none set: the SDK's default chain. */
  accessKeyIdEnv?: string[];
  secretAccessKeyEnv?: string[];
  /**
   * Variables that may hold the session token of temporary credentials (an assumed role, SSO,
   * Lambda, ECS). The one named like the access key's variable is sent with the key pair
   * (`AWS_ACCESS_KEY_ID` with `AWS_SESSION_TOKEN`). Default: `AWS_SESSION_TOKEN` (R2: `R2_SESSION_TOKEN`).
   */
  sessionTokenEnv?: string[];
  /** Variables tried in order for the endpoint. */
  endpointEnv?: string[];
  /** R2: the variable holding the Cloudflare account id the endpoint is derived from. */
  accountIdEnv?: string[];
}

export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const S3_MINIMUM_PART_SIZE = 5 * 1024 * 1024;
/** S3 refuses a larger part of a multipart upload. */
export const S3_MAXIMUM_PART_SIZE = 5 * 1024 * 1024 * 1024;

export const S3_ENV = {
  bucketEnv: ["S3_BUCKET"],
  accessKeyIdEnv: ["AWS_ACCESS_KEY_ID"],
  secretAccessKeyEnv: ["AWS_SECRET_ACCESS_KEY"],
  sessionTokenEnv: ["AWS_SESSION_TOKEN"],
  // The AWS SDK's own variables, read here so the store's env, path-style default and errors apply to them.
  endpointEnv: ["S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
} as const;

export const R2_ENV = {
  bucketEnv: ["R2_BUCKET", "S3_BUCKET"],
  accessKeyIdEnv: ["R2_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"],
  secretAccessKeyEnv: ["R2_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"],
  // Not AWS_SESSION_TOKEN: a host on AWS has one for its own role, which R2 would refuse.
  sessionTokenEnv: ["R2_SESSION_TOKEN"],
  endpointEnv: ["R2_ENDPOINT", "S3_ENDPOINT"],
  accountIdEnv: ["R2_ACCOUNT_ID"],
} as const;

/** What the store applies itself, whichever client sends its requests. */
export interface S3StoreSettings {
  bucket: string;
  prefix: string;
  multipartThresholdBytes: number;
  partSizeBytes: number;
}

/** Everything the store needs, its own client's settings too, after env is read. */
export interface ResolvedS3Settings extends S3StoreSettings {
  endpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
  requestTimeoutMs: number;
}

const firstSet = (env: Record<string, string | undefined>, names: readonly string[] | undefined): string | undefined => {
  for (const name of names ?? []) {
    const value = env[name];
    if (value !== undefined && value !== "") return value;
  }
  return undefined;
};

export function configError(message: string, fix: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_BLOB_CONFIG", message, { fix });
}

const OPTION_NAMES = ["bucket", "endpoint", "region", "forcePathStyle", "prefix", "requestTimeoutMs", "multipartThresholdBytes", "partSizeBytes", "bucketEnv", "accessKeyIdEnv", "secretAccessKeyEnv", "sessionTokenEnv", "endpointEnv", "accountIdEnv"];

const ENV_LIST_OPTIONS = ["bucketEnv", "accessKeyIdEnv", "secretAccessKeyEnv", "sessionTokenEnv", "endpointEnv", "accountIdEnv"] as const;

/** The options that only build the store's own S3Client: where it connects, as whom, how long it waits. */
export const OWN_CLIENT_OPTIONS = ["endpoint", "region", "forcePathStyle", "requestTimeoutMs", "accessKeyIdEnv", "secretAccessKeyEnv", "sessionTokenEnv", "endpointEnv", "accountIdEnv"] as const;

/** A misspelt option would otherwise be dropped silently (e.g. `perfix` storing every key at the bucket's root). */
export function refuseUnknownOptions(options: object, extra: readonly string[] = []): void {
  const known = new Set([...OPTION_NAMES, ...extra]);
  const unknown = Object.keys(options).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw configError(`unknown option${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`, `Remove ${unknown.length > 1 ? "them" : "it"}; the options are ${OPTION_NAMES.join(", ")}.`);
  }
}

/**
 * A client given is used as it was built: its endpoint, region, keys and timeouts. Options that would
 * build another are refused rather than dropped: a store told `endpoint` and `requestTimeoutMs` would
 * send elsewhere and wait longer than asked, and its errors would name what it never used.
 */
export function refuseOwnClientOptions(options: S3BlobOptions): void {
  const ignored = OWN_CLIENT_OPTIONS.filter((name) => options[name] !== undefined);
  if (ignored.length === 0) return;
  const [them, are] = ignored.length > 1 ? ["them", "are"] : ["it", "is"];
  throw configError(
    `option${ignored.length > 1 ? "s" : ""} ${ignored.join(", ")} ${are} for the store's own S3 client; with client given, ${them} would be ignored`,
    `Leave ${them} out: the client's own configuration (endpoint, region, credentials, timeouts) applies. Build the client with ${them}, or pass no client.`,
  );
}

/** The store's own settings alone, for a store given a client: its bucket from `bucketEnv`, but no endpoint or keys read from env. */
export function resolveS3StoreSettings(given: S3BlobOptions, env: Record<string, string | undefined>): S3StoreSettings {
  return storeSettings(withDefaultVariables(given), env);
}

/** Read the options' env variables now (when the host materializes the descriptor), failing with what is missing. */
export function resolveS3Settings(given: S3BlobOptions, env: Record<string, string | undefined>): ResolvedS3Settings {
  const options = withDefaultVariables(given);
  const { bucket, prefix, multipartThresholdBytes, partSizeBytes } = storeSettings(options, env);
  // A string would reach the SDK as is, which reads any non-empty one ("false" too) as true.
  if (options.forcePathStyle !== undefined && typeof options.forcePathStyle !== "boolean") {
    throw configError(`forcePathStyle ${JSON.stringify(options.forcePathStyle)} is not true or false`, "Pass forcePathStyle: true or false (a boolean, not a string), or omit it: true with an endpoint.");
  }
  const endpointVariable = options.endpoint === undefined ? (options.endpointEnv ?? []).find((name) => env[name] !== undefined && env[name] !== "") : undefined;
  let endpoint = options.endpoint ?? (endpointVariable === undefined ? undefined : env[endpointVariable]);
  if (endpoint === undefined && options.accountIdEnv) {
    const account = firstSet(env, options.accountIdEnv);
    if (!account) {
      throw configError(`r2Blob() has no endpoint: ${options.accountIdEnv.join(", ")} is unset`, "Set R2_ACCOUNT_ID to your Cloudflare account id, or pass { endpoint }.");
    }
    if (!/^[A-Za-z0-9]{1,64}$/.test(account)) throw configError(`R2_ACCOUNT_ID ${JSON.stringify(account)} is not an account id`, "Use the 32-character id from the Cloudflare dashboard.");
    endpoint = `https://${account}.r2.cloudflarestorage.com`;
  }
  if (endpoint !== undefined) checkEndpoint(endpoint, endpointVariable, options);
  const keys = keyPair(env, options);
  if (options.region !== undefined && (typeof options.region !== "string" || options.region.trim() === "")) {
    throw configError(`region ${JSON.stringify(options.region)} is not a region name`, `Use a region such as "eu-west-1" (R2: "auto"), or omit it for AWS_REGION, else ${options.accountIdEnv ? "auto" : "us-east-1"}.`);
  }
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!isTimerDelay(requestTimeoutMs)) {
    throw configError(`requestTimeoutMs ${JSON.stringify(options.requestTimeoutMs)} is not a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`, "Use a number such as 30000, or omit it.");
  }
  return {
    bucket,
    endpoint,
    region: options.region ?? (options.accountIdEnv ? "auto" : (firstSet(env, ["AWS_REGION"]) ?? "us-east-1")),
    forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
    prefix,
    credentials: keys && withSessionToken(keys.pair, sessionTokenFor(env, options, keys.idVariable)),
    multipartThresholdBytes,
    partSizeBytes,
    requestTimeoutMs,
  };
}

/** Without variable lists (a store built directly), the plain S3 ones; each list checked. */
function withDefaultVariables(given: S3BlobOptions): S3BlobOptions {
  const options: S3BlobOptions = {
    bucketEnv: [...S3_ENV.bucketEnv],
    accessKeyIdEnv: [...S3_ENV.accessKeyIdEnv],
    secretAccessKeyEnv: [...S3_ENV.secretAccessKeyEnv],
    endpointEnv: [...S3_ENV.endpointEnv],
    // A descriptor built before the option: r2Blob()'s (it names accountIdEnv) takes R2's variable.
    sessionTokenEnv: [...(given.accountIdEnv ? R2_ENV : S3_ENV).sessionTokenEnv],
    ...given,
  };
  for (const name of ENV_LIST_OPTIONS) {
    const names: unknown = options[name];
    // A string would be read letter by letter as variable names, and the keys would silently come from elsewhere.
    if (names !== undefined && !(Array.isArray(names) && names.every((item) => typeof item === "string" && item !== ""))) {
      throw configError(`${name} is ${JSON.stringify(names)}, not a list of variable names`, `Pass ${name}: ["MY_VARIABLE"], or omit it for the default.`);
    }
  }
  return options;
}

function storeSettings(options: S3BlobOptions, env: Record<string, string | undefined>): S3StoreSettings {
  const bucketVariable = options.bucket === undefined ? (options.bucketEnv ?? []).find((name) => env[name] !== undefined && env[name] !== "") : undefined;
  const bucket = options.bucket ?? (bucketVariable === undefined ? undefined : env[bucketVariable]);
  if (bucket === undefined) {
    throw configError(`no bucket: options.bucket is not given and ${(options.bucketEnv ?? []).join(", ") || "no bucket variable"} is unset`, `Pass { bucket: "my-bucket" } or set ${options.bucketEnv?.[0] ?? "S3_BUCKET"}.`);
  }
  checkBucket(bucket, bucketVariable);
  const partSizeBytes = options.partSizeBytes ?? DEFAULT_PART_SIZE;
  if (!Number.isInteger(partSizeBytes) || partSizeBytes < S3_MINIMUM_PART_SIZE || partSizeBytes > S3_MAXIMUM_PART_SIZE) {
    throw configError(`partSizeBytes ${partSizeBytes} is not a whole number of bytes from S3's 5 MiB minimum part size to its 5 GiB maximum`, `Use ${S3_MINIMUM_PART_SIZE} to ${S3_MAXIMUM_PART_SIZE}, e.g. the default ${DEFAULT_PART_SIZE}.`);
  }
  const multipartThresholdBytes = options.multipartThresholdBytes ?? partSizeBytes;
  if (!Number.isInteger(multipartThresholdBytes) || multipartThresholdBytes < 1) {
    throw configError(`multipartThresholdBytes ${multipartThresholdBytes} is not a positive integer`, "Use a byte count such as 8388608.");
  }
  return { bucket, prefix: checkPrefix(options.prefix ?? ""), multipartThresholdBytes, partSizeBytes };
}

/**
 * Only names no S3-compatible service takes are refused, so a bad one fails here and not on the first
 * request as an outage: the widest rule in use (AWS's legacy us-east-1 names, Ceph's relaxed names) is
 * 1 to 255 letters, digits, ".", "-" and "_". The service checks the rest (AWS's own rule today:
 * 3 to 63 lowercase letters, digits, dots and hyphens), since other servers take names it does not.
 */
function checkBucket(bucket: unknown, variable: string | undefined): void {
  const shown = `bucket ${JSON.stringify(bucket)}${variable === undefined ? "" : ` (from ${variable})`}`;
  const fix = `Use the bucket's name alone, e.g. "agent-files" (AWS: 3 to 63 lowercase letters, digits, dots and hyphens).`;
  if (typeof bucket !== "string" || bucket === "") throw configError(`${shown} is not a non-empty string`, fix);
  const slash = bucket.search(/[/\\]/);
  if (slash !== -1) {
    const [name, folder] = [bucket.slice(0, slash), bucket.slice(slash + 1).replace(/[/\\]+$/, "")];
    throw configError(`${shown} holds a "${bucket[slash]}": a bucket name is one name, not a path`, `Put the folder in prefix: { bucket: ${JSON.stringify(name)}, prefix: ${JSON.stringify(`${folder}/`)} }.`);
  }
  if (bucket.length > 255) throw configError(`${shown} is ${bucket.length} characters long; no S3 service takes more than 255`, fix);
  const other = /[^A-Za-z0-9._-]/u.exec(bucket)?.[0];
  if (other !== undefined) {
    const named = /\s/.test(other) ? "whitespace" : `${JSON.stringify(other)} (U+${other.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")})`;
    throw configError(`${shown} holds ${named}; bucket names are letters, digits, ".", "-" and "_"`, fix);
  }
}

/**
 * An endpoint is an origin: `http(s)://host[:port]`. The SDK puts a path in front of every key
 * (`https://<account>.r2.cloudflarestorage.com/media` stores put("a") as `media/a`, and list() fails),
 * and drops userinfo without a word, so both are refused, as are a query and a fragment. The errors
 * quote the endpoint only without its userinfo, query and fragment, where keys or tokens may be.
 */
function checkEndpoint(endpoint: string, variable: string | undefined, options: S3BlobOptions): void {
  const example = "Use an origin such as https://<account>.r2.cloudflarestorage.com or http://127.0.0.1:4568";
  const shown = `${quotedUrl(endpoint)}${variable === undefined ? "" : ` (from ${variable})`}`;
  const url = URL.canParse(endpoint) ? new URL(endpoint) : undefined;
  // new URL("localhost:9000") parses, as scheme "localhost:": say what is missing instead.
  if (url === undefined || !/^\s*[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(endpoint)) throw configError(`endpoint ${shown} is not a URL${url === undefined ? "" : ": it has no http:// or https:// scheme"}`, `${example}.`);
  if (url.protocol !== "https:" && url.protocol !== "http:") throw configError(`endpoint ${shown} is not http(s)`, `${example}.`);
  if (url.username !== "" || url.password !== "") {
    throw configError(
      `endpoint ${shown} holds a user name or password, which the S3 client ignores (requests would be signed with other keys)`,
      `Remove it from the endpoint; set the keys in ${options.accessKeyIdEnv?.[0] ?? "AWS_ACCESS_KEY_ID"} and ${options.secretAccessKeyEnv?.[0] ?? "AWS_SECRET_ACCESS_KEY"}.`,
    );
  }
  if (url.pathname !== "/") {
    throw configError(
      `endpoint ${shown} has a path (${url.pathname}), which the S3 client would put in front of every key`,
      `Use the endpoint without it (${url.origin}); the bucket goes in the bucket option (or ${options.bucketEnv?.[0] ?? "S3_BUCKET"}), a folder in prefix.`,
    );
  }
  // An empty "?" or "#" serializes too, though search and hash are then "".
  if (/[?#]/.test(url.href)) {
    const part = url.href.includes("?") ? "a query string" : "a fragment";
    throw configError(`endpoint ${shown} has ${part}; an endpoint is a scheme, a host and a port`, `Use the endpoint without it (${url.origin}).`);
  }
}

/**
 * The key pair of one credential set: `accessKeyIdEnv` and `secretAccessKeyEnv` are read in pairs, by
 * position, and the first pair with a variable set decides. Each list read on its own would mix sets
 * (`R2_ACCESS_KEY_ID` with the host role's `AWS_SECRET_ACCESS_KEY` when `R2_SECRET_ACCESS_KEY` is
 * misspelt), and every request would fail as a signature error far from the cause. None set: the SDK's
 * default chain.
 */
function keyPair(env: Record<string, string | undefined>, options: S3BlobOptions): { pair: { accessKeyId: string; secretAccessKey: string }; idVariable: string } | undefined {
  const ids = options.accessKeyIdEnv ?? [];
  const secrets = options.secretAccessKeyEnv ?? [];
  if (ids.length !== secrets.length) {
    throw configError(
      `accessKeyIdEnv [${ids.join(", ")}] and secretAccessKeyEnv [${secrets.join(", ")}] differ in length; they are read in pairs, by position, so a key id and a secret come from the same credentials`,
      "List one secret variable for each access key id variable, in the same order (e.g. accessKeyIdEnv: [\"MY_ACCESS_KEY_ID\"], secretAccessKeyEnv: [\"MY_SECRET_ACCESS_KEY\"]).",
    );
  }
  for (const [index, idVariable] of ids.entries()) {
    const secretVariable = secrets[index]!;
    const accessKeyId = firstSet(env, [idVariable]);
    const secretAccessKey = firstSet(env, [secretVariable]);
    if (accessKeyId !== undefined && secretAccessKey !== undefined) return { pair: { accessKeyId, secretAccessKey }, idVariable };
    if (accessKeyId === undefined && secretAccessKey === undefined) continue;
    const [set, unset] = accessKeyId !== undefined ? [idVariable, secretVariable] : [secretVariable, idVariable];
    const after = ids.slice(index + 1).map((name, later) => `${name} + ${secrets[index + 1 + later]}`);
    throw configError(
      `${set} is set but ${unset} is not: a key id and its secret are read from the same pair of variables, never one from another set`,
      `Set ${unset} too (check its spelling), or unset ${set} to use ${after.length > 0 ? `${after.join(", then ")}, else ` : ""}the SDK's default credential chain.`,
    );
  }
  return undefined;
}

/**
 * The session token that goes with the key pair read: from the `sessionTokenEnv` variable named like
 * the access key's (`AWS_ACCESS_KEY_ID` → `AWS_SESSION_TOKEN`, `R2_ACCESS_KEY_ID` → `R2_SESSION_TOKEN`),
 * as the AWS SDK pairs them. Keys from a variable of another name (`MINIO_ACCESS_KEY_ID`, `MY_AK`) take
 * none: a token the host holds for its own AWS role would make the service refuse every request.
 */
function sessionTokenFor(env: Record<string, string | undefined>, options: S3BlobOptions, keyVariable: string): string | undefined {
  if (!keyVariable.endsWith("ACCESS_KEY_ID")) return undefined;
  const paired = `${keyVariable.slice(0, -"ACCESS_KEY_ID".length)}SESSION_TOKEN`;
  return (options.sessionTokenEnv ?? []).includes(paired) ? firstSet(env, [paired]) : undefined;
}

/** The key pair, with the session token of temporary credentials when one is set (they fail without it). */
function withSessionToken(keys: { accessKeyId: string; secretAccessKey: string }, sessionToken: string | undefined): NonNullable<ResolvedS3Settings["credentials"]> {
  return sessionToken === undefined ? keys : { ...keys, sessionToken };
}

/*
 * A prefix is a folder: without its closing "/", the store with prefix
 * "agents/a" would list, read and delete the keys of the one with "agents/ab".
 */
function checkPrefix(prefix: string): string {
  if (typeof prefix !== "string") throw configError(`prefix ${JSON.stringify(prefix)} is not a string`, 'Use a prefix such as "agents/support/", or omit it.');
  if (prefix === "") return prefix;
  if (!prefix.endsWith("/")) {
    throw configError(`prefix ${JSON.stringify(prefix)} does not end with "/", so its keys would mix with those of every prefix that starts the same way`, `Use ${JSON.stringify(`${prefix}/`)}.`);
  }
  // As in keys: a listing may not return a control character as written.
  if (/[\u0000-\u001f]/.test(prefix)) throw configError(`prefix ${JSON.stringify(prefix)} contains a control character (U+0000 to U+001F)`, 'Use printable "/"-separated names, e.g. "agents/support/".');
  // As in keys: "\" is no separator, and a lone surrogate has no UTF-8 form to send.
  if (prefix.includes("\\")) throw configError(`prefix ${JSON.stringify(prefix)} contains "\\"`, 'Separate segments with "/", e.g. "agents/support/".');
  if (/\p{Surrogate}/u.test(prefix)) throw configError(`prefix ${JSON.stringify(prefix)} is not well-formed Unicode (it holds a lone surrogate, which has no UTF-8 form)`, 'Use "/"-separated names, e.g. "agents/support/".');
  if (prefix.slice(0, -1).split("/").some((segment) => segment === "" || segment === "." || segment === "..")) {
    throw configError(`prefix ${JSON.stringify(prefix)} has an empty, "." or ".." segment`, 'Use "/"-separated names, e.g. "agents/support/".');
  }
  return prefix;
}
