import { readFileSync } from "node:fs";
import { definePlugin } from "@assemblyline-agents/core";
import { S3_PLUGIN_ID, createS3Blob } from "./gateway.js";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** S3/R2 blobs as a kernel plugin: materializes `s3Blob()` / `r2Blob()` descriptors and passes on any other plugin's. */
export const plugin = definePlugin({
  name: S3_PLUGIN_ID,
  version: PACKAGE_VERSION,
  apply(kernel) {
    kernel.hooks.slot.for("blob").tapPromise({ name: S3_PLUGIN_ID }, async (descriptor, context) =>
      descriptor.plugin === S3_PLUGIN_ID ? createS3Blob(descriptor as never, { env: context.env }) : undefined,
    );
  },
});
