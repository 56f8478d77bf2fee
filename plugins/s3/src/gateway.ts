import { adapterDescriptor, isAdapterDescriptor, type AdapterDescriptor } from "@assemblyline-agents/core";
import { OWN_CLIENT_OPTIONS, R2_ENV, S3_ENV, type S3BlobOptions } from "./options.js";
import { S3BlobStore, type S3BlobStoreOptions } from "./s3-blob-store.js";

/** The plugin id descriptors name; the kernel routes them to `createS3Blob`. */
export const S3_PLUGIN_ID = "s3";

export type S3BlobDescriptor = AdapterDescriptor<"blob", S3BlobOptions>;

/**
 * `blob: s3Blob({ bucket })` in gateway.ts: blobs in an S3 bucket, or on any
 * S3-compatible server with `endpoint` (path-style by default then). Keys come
 * from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (else the SDK's default chain),
 * read when the host materializes the descriptor, so the manifest holds no secret.
 */
export function s3Blob(options: S3BlobOptions = {}): S3BlobDescriptor {
  return adapterDescriptor("blob", S3_PLUGIN_ID, { ...copyArrays(S3_ENV), ...options });
}

/**
 * `blob: r2Blob()` in gateway.ts: Cloudflare R2. The endpoint is
 * `https://$R2_ACCOUNT_ID.r2.cloudflarestorage.com` unless `endpoint` (or
 * `$R2_ENDPOINT`/`$S3_ENDPOINT`) names another; keys from R2_ACCESS_KEY_ID /
 * R2_SECRET_ACCESS_KEY, else the AWS_ pair; bucket from `$R2_BUCKET`.
 */
export function r2Blob(options: S3BlobOptions = {}): S3BlobDescriptor {
  return adapterDescriptor("blob", S3_PLUGIN_ID, { ...copyArrays(R2_ENV), ...options });
}

/**
 * Materialize a descriptor (or plain options): the host's side of s3Blob()/r2Blob(). With a `client`,
 * a descriptor's variable lists the helper filled in for the store's own client are dropped; any other
 * option for that client (an endpoint, a list of your own) is refused, as the store refuses it.
 */
export function createS3Blob(options: S3BlobDescriptor | S3BlobStoreOptions = {}, context: Pick<S3BlobStoreOptions, "env" | "client"> = {}): S3BlobStore {
  const resolved = isAdapterDescriptor(options) ? (options.options as S3BlobOptions) : options;
  const given = isAdapterDescriptor(options) && context.client !== undefined ? withoutHelperVariables(resolved) : resolved;
  return new S3BlobStore({ ...given, ...context });
}

function withoutHelperVariables(options: S3BlobOptions): S3BlobOptions {
  const filledIn = (name: string, value: unknown) =>
    [S3_ENV, R2_ENV].some((defaults) => {
      const list = (defaults as Record<string, readonly string[] | undefined>)[name];
      return list !== undefined && Array.isArray(value) && value.length === list.length && value.every((item, index) => item === list[index]);
    });
  return Object.fromEntries(Object.entries(options).filter(([name, value]) => !((OWN_CLIENT_OPTIONS as readonly string[]).includes(name) && filledIn(name, value))));
}

function copyArrays<T extends Record<string, readonly string[]>>(value: T): { [K in keyof T]: string[] } {
  return Object.fromEntries(Object.entries(value).map(([key, list]) => [key, [...list]])) as { [K in keyof T]: string[] };
}
