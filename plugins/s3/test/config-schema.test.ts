import { readFileSync } from "node:fs";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { createS3Blob, s3Blob } from "../src/index.js";

// The registry checks a gateway slot's options against config.schema.json before the factory sees
// them: a name the store takes but the schema refuses could never be configured through a gateway.
const schema = JSON.parse(readFileSync(new URL("../config.schema.json", import.meta.url), "utf8")) as object;
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

const storeTakes = (bucket: string): boolean => {
  try {
    createS3Blob(s3Blob({ bucket }), { env: {} });
    return true;
  } catch (error) {
    if (isAssemblyLineError(error, "AL_ERR_BLOB_CONFIG")) return false;
    throw error;
  }
};

describe("config.schema.json's bucket rule", () => {
  it.each([
    ["a short legacy name", "ab", true],
    ["a name with capitals and underscores (legacy us-east-1, Ceph)", "Legacy_Bucket", true],
    ["a 100-character name", "b".repeat(100), true],
    ["the longest name any service takes", "b".repeat(255), true],
    ["a name over 255 characters", "b".repeat(256), false],
    ["a name with a folder", "media/agents", false],
    ["a name with a space", "my media", false],
    ["an empty name", "", false],
  ])("agrees with the store on %s", (_, bucket, taken) => {
    expect(storeTakes(bucket)).toBe(taken);
    expect(validate({ bucket }), JSON.stringify(validate.errors)).toBe(taken);
  });
});
