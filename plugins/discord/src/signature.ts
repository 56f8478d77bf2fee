import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** Discord's application public key: 32 bytes, hex in the developer portal. */
const PUBLIC_KEY_PATTERN = /^[0-9a-f]{64}$/i;
/** An Ed25519 signature: 64 bytes, hex. */
const SIGNATURE_PATTERN = /^[0-9a-f]{128}$/i;
const TIMESTAMP_PATTERN = /^\d{1,12}$/;

/** A refusal the host answers with this status (401: unsigned or badly signed). */
export class DiscordRequestRefused extends AssemblyLineError {
  constructor(
    readonly status: number,
    message: string,
    fix: string,
  ) {
    super(status === 401 ? "AL_ERR_DISCORD_SIGNATURE" : "AL_ERR_DISCORD_INTERACTION", message, { fix });
  }
}

/** Parse the hex public key once; a malformed key is a configuration error. */
export function parsePublicKey(hex: string | undefined, envName: string): KeyObject {
  const value = (hex ?? "").trim();
  if (!PUBLIC_KEY_PATTERN.test(value)) {
    throw new AssemblyLineError("AL_ERR_DISCORD_CONFIG", value === "" ? `${envName} is not set` : `${envName} is not a 64-character hex Ed25519 public key`, {
      fix: `Set ${envName} to the application's public key from the Discord developer portal (General Information).`,
    });
  }
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(value, "hex").toString("base64url") }, format: "jwk" });
}

/**
 * Check X-Signature-Ed25519 over `timestamp + rawBody` (Discord's scheme) and
 * that X-Signature-Timestamp is within `maxSkewSeconds` of now, so a captured
 * request cannot be replayed later. Fails closed: anything missing, malformed
 * or mismatched is a 401.
 */
export function verifyDiscordRequest(
  headers: Record<string, string | undefined>,
  rawBody: Uint8Array,
  publicKey: KeyObject,
  options: { maxSkewSeconds: number; now?: number },
): void {
  const signature = headers["x-signature-ed25519"]?.trim() ?? "";
  const timestamp = headers["x-signature-timestamp"]?.trim() ?? "";
  const refuse = (why: string) => new DiscordRequestRefused(401, `invalid request signature: ${why}`, "Only Discord's signed interaction requests are accepted.");
  if (signature === "" || timestamp === "") throw refuse("X-Signature-Ed25519 and X-Signature-Timestamp are required");
  if (!SIGNATURE_PATTERN.test(signature)) throw refuse("X-Signature-Ed25519 is not a hex Ed25519 signature");
  if (!TIMESTAMP_PATTERN.test(timestamp)) throw refuse("X-Signature-Timestamp is not a Unix time in seconds");
  const skew = Math.abs((options.now ?? Date.now()) / 1000 - Number(timestamp));
  if (skew > options.maxSkewSeconds) throw refuse(`the timestamp is ${Math.round(skew)} s away from now (at most ${options.maxSkewSeconds} s)`);
  const signed = Buffer.concat([Buffer.from(timestamp, "utf8"), rawBody]);
  if (!verify(null, signed, publicKey, Buffer.from(signature, "hex"))) throw refuse("the signature does not match the application's public key");
}
