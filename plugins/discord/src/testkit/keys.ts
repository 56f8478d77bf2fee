import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";

/** A fresh Ed25519 application key pair, the public half as Discord shows it (hex). */
export interface DiscordTestKeys {
  publicKeyHex: string;
  privateKey: KeyObject;
}

export function discordTestKeys(): DiscordTestKeys {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x!;
  return { publicKeyHex: Buffer.from(x, "base64url").toString("hex"), privateKey };
}

/** Sign a body the way Discord does: Ed25519 over `timestamp + body`, hex. */
export function signDiscordBody(body: string, privateKey: KeyObject, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const stamp = String(timestamp);
  return {
    "content-type": "application/json",
    "x-signature-ed25519": sign(null, Buffer.from(stamp + body, "utf8"), privateKey).toString("hex"),
    "x-signature-timestamp": stamp,
  };
}
