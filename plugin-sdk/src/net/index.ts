export { classifyAddress, type AddressClass } from "./address-class.js";
export { DEFAULT_MAX_REDIRECTS, type OutboundPolicy, type OutboundResolver, type ResolvedAddress } from "./outbound-policy.js";
export { createGuardedFetch } from "./guarded-fetch.js";
export { quotableUrl, quotedUrl, urlCredentials } from "./quoted-url.js";
