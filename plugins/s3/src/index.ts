export { S3BlobStore, type S3BlobStoreOptions } from "./s3-blob-store.js";
export { S3_PLUGIN_ID, createS3Blob, r2Blob, s3Blob, type S3BlobDescriptor } from "./gateway.js";
export { R2_ENV, S3_ENV, resolveS3Settings, type ResolvedS3Settings, type S3BlobOptions, type S3StoreSettings } from "./options.js";
export { plugin } from "./plugin.js";
