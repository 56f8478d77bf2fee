import { createRequire } from "node:module";
import type IpAddr from "ipaddr.js";

// ipaddr.js is CommonJS, and importing it from ESM cost every importer of the SDK (each command of the
// CLI, each host) about 40 ms of start-up: it loads on the first address classified instead.
let loaded: typeof IpAddr | undefined;
const ipaddrLibrary = (): typeof IpAddr => (loaded ??= createRequire(import.meta.url)("ipaddr.js") as typeof IpAddr);

/**
 * Where an IP address points, by the ranges IANA reserves. `range` is "unicast"
 * for an ordinary public address; anything else (loopback, private, linkLocal,
 * metadata, uniqueLocal, carrierGradeNat, ipv4Mapped, ipv4Compatible, rfc6052
 * NAT64, deprecatedSiteLocal, multicast, unspecified, broadcast, reserved, 6to4,
 * teredo, ... or "invalid" for text that is no address) is special, and only
 * hosts an OutboundPolicy lists by name may reach it.
 */
export interface AddressClass {
  /** The address in canonical form ("127.0.0.1", "::ffff:7f00:1"). */
  address: string;
  range: string;
  /** True only for "unicast": reachable by any outbound request. */
  public: boolean;
  /** For IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4): that address's class. */
  embedded?: AddressClass;
}

/** The instance metadata endpoint of AWS, GCP, Azure and others: named apart so refusals say so. */
const METADATA_ADDRESSES = new Set(["169.254.169.254", "fd00:ec2::254"]);

/** Classify one IP address; fails closed: text that does not parse is "invalid" and not public. */
export function classifyAddress(ip: string): AddressClass {
  const ipaddr = ipaddrLibrary();
  const text = ip.trim().replace(/^\[|\]$/g, "");
  if (!ipaddr.isValid(text)) return { address: text, range: "invalid", public: false };
  const parsed = ipaddr.parse(text);
  const address = parsed.toString();
  if (METADATA_ADDRESSES.has(address)) return { address, range: "metadata", public: false };
  if (parsed.kind() === "ipv4") {
    const range = (parsed as IpAddr.IPv4).range();
    return { address, range, public: range === "unicast" };
  }
  const v6 = parsed as IpAddr.IPv6;
  const embedded = embeddedIpv4(v6);
  // ::/96 (IPv4-compatible, deprecated) is no range of ipaddr.js but still reaches the IPv4 host on some stacks.
  const range = v6.range() === "unicast" && v6.match(ipaddr.parseCIDR("::/96")) ? "ipv4Compatible" : v6.range();
  return { address, range, public: range === "unicast", ...(embedded ? { embedded: classifyAddress(embedded) } : {}) };
}

/** The IPv4 address an IPv6 form carries, for the message: mapped, compatible, NAT64 (/96) or 6to4. */
function embeddedIpv4(v6: IpAddr.IPv6): string | undefined {
  const ipaddr = ipaddrLibrary();
  const parts = v6.parts;
  const fromLow = () => `${parts[6]! >> 8}.${parts[6]! & 0xff}.${parts[7]! >> 8}.${parts[7]! & 0xff}`;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  if (v6.match(ipaddr.parseCIDR("::/96")) && !(parts[6] === 0 && parts[7]! <= 1)) return fromLow();
  if (v6.match(ipaddr.parseCIDR("64:ff9b::/96"))) return fromLow();
  if (v6.match(ipaddr.parseCIDR("2002::/16"))) return `${parts[1]! >> 8}.${parts[1]! & 0xff}.${parts[2]! >> 8}.${parts[2]! & 0xff}`;
  return undefined;
}
