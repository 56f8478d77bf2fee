import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classifyAddress, createGuardedFetch, isAssemblyLineError, type OutboundResolver } from "@assemblyline-agents/core";

interface Recorder {
  server: Server;
  port: number;
  requests: IncomingMessage[];
}

async function listen(handler: (request: IncomingMessage, respond: (status: number, headers?: Record<string, string>, body?: string) => void) => void): Promise<Recorder> {
  const requests: IncomingMessage[] = [];
  const server = createServer((request, response) => {
    requests.push(request);
    handler(request, (status, headers = {}, body = "") => response.writeHead(status, headers).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port, requests };
}

/** Names of this test's own DNS: everything here resolves to 127.0.0.1 except where noted. */
const resolver: OutboundResolver = async (hostname) => {
  if (hostname === "nowhere.test") throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  if (hostname === "empty.test") return [];
  if (hostname === "mixed.test") return [{ address: "93.184.216.34", family: 4 }, { address: "127.0.0.1", family: 4 }];
  if (hostname === "mapped.test") return [{ address: "::ffff:127.0.0.1", family: 6 }];
  return [{ address: "127.0.0.1", family: 4 }];
};

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, "the request should have been refused").toBeDefined();
  return isAssemblyLineError(error) ? error.code : `not an AssemblyLineError: ${String(error)}`;
}

describe("outbound address guard", () => {
  let canary: Recorder;
  let internal: Recorder;
  let redirector: Recorder;

  beforeAll(async () => {
    canary = await listen((_request, respond) => respond(200, {}, "canary reached"));
    internal = await listen((request, respond) => respond(200, { "content-type": "text/plain" }, `auth=${request.headers.authorization ?? "none"}`));
    redirector = await listen((request, respond) => {
      const target = new URL(request.url!, "http://x").searchParams.get("to")!;
      respond(302, { location: target });
    });
  });
  afterAll(async () => {
    for (const recorder of [canary, internal, redirector]) await new Promise((resolve) => recorder.server.close(resolve));
  });

  const spellings = (port: number) => [
    `http://127.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    `http://2130706433:${port}/`,
    `http://0x7f.0.0.1:${port}/`,
    `http://0177.0.0.1:${port}/`,
    `http://0.0.0.0:${port}/`,
    `http://localhost:${port}/`,
    `http://[::1]:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://[::ffff:7f00:1]:${port}/`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${port}/`,
    `http://[::7f00:1]:${port}/`,
    `http://[::127.0.0.1]:${port}/`,
    `http://[64:ff9b::7f00:1]:${port}/`,
    `http://[fec0::1]:${port}/`,
    `http://[::ffff:a9fe:a9fe]:${port}/`,
    `http://[::ffff:169.254.169.254]:${port}/`,
    `http://[::ffff:c0a8:101]:${port}/`,
    `http://[::ffff:192.168.1.1]:${port}/`,
    `http://169.254.169.254:${port}/`,
    `http://10.0.0.1:${port}/`,
    `http://100.64.0.1:${port}/`,
    `http://[fd00::1]:${port}/`,
    `http://[fe80::1]:${port}/`,
    `http://[2002:7f00:1::]:${port}/`,
    `http://rebind.test:${port}/`,
    `http://mixed.test:${port}/`,
    `http://mapped.test:${port}/`,
  ];

  it("refuses every spelling of loopback, private and metadata addresses, and the canary sees no request", async () => {
    const guarded = createGuardedFetch({ resolve: resolver });
    const outcomes: Record<string, string> = {};
    for (const url of spellings(canary.port)) outcomes[url] = await refusal(guarded(url, { signal: AbortSignal.timeout(5_000) }));
    expect(Object.entries(outcomes).filter(([, code]) => code !== "AL_ERR_OUTBOUND_ADDRESS_REFUSED")).toEqual([]);
    expect(canary.requests.length).toBe(0);
  });

  it("fails closed when the lookup fails or answers no address", async () => {
    const guarded = createGuardedFetch({ resolve: resolver });
    await expect(guarded(`http://nowhere.test:${canary.port}/`)).rejects.toThrow();
    expect(await refusal(guarded(`http://empty.test:${canary.port}/`))).toBe("AL_ERR_OUTBOUND_ADDRESS_REFUSED");
    expect(canary.requests.length).toBe(0);
  });

  it("re-checks every redirect hop, including the address it connects to", async () => {
    const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["redirector.test"] });
    for (const target of [`http://127.0.0.1:${canary.port}/`, `http://[::ffff:7f00:1]:${canary.port}/`, `http://rebind.test:${canary.port}/`]) {
      const url = `http://redirector.test:${redirector.port}/?to=${encodeURIComponent(target)}`;
      expect(await refusal(guarded(url))).toBe("AL_ERR_OUTBOUND_ADDRESS_REFUSED");
    }
    expect(redirector.requests.length).toBe(3);
    expect(canary.requests.length).toBe(0);
  });

  it("lets a host listed by name reach its private address, and only that host", async () => {
    const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["internal.test"] });
    const response = await guarded(`http://internal.test:${internal.port}/`);
    expect(await response.text()).toBe("auth=none");
    expect(await refusal(guarded(`http://other.test:${canary.port}/`))).toBe("AL_ERR_OUTBOUND_ADDRESS_REFUSED");
    expect(canary.requests.length).toBe(0);
  });

  it("with onlyAllowedHosts refuses unlisted hosts, also as redirect targets", async () => {
    const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["redirector.test", "*.example.com"], onlyAllowedHosts: true });
    expect(await refusal(guarded("http://93.184.216.34/"))).toBe("AL_ERR_OUTBOUND_HOST_REFUSED");
    const url = `http://redirector.test:${redirector.port}/?to=${encodeURIComponent("http://elsewhere.test/")}`;
    expect(await refusal(guarded(url))).toBe("AL_ERR_OUTBOUND_HOST_REFUSED");
    expect(await refusal(guarded("file:///etc/passwd"))).toBe("AL_ERR_OUTBOUND_HOST_REFUSED");
  });

  it("with withinHosts refuses a redirect to a host outside it that allowedHosts admits, and grants no host a special address", async () => {
    const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["redirector.test", "internal.test"], withinHosts: ["redirector.test", "*.cdn.test"] });
    const before = internal.requests.length;
    const url = `http://redirector.test:${redirector.port}/?to=${encodeURIComponent(`http://internal.test:${internal.port}/`)}`;
    const error = await guarded(url).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_OUTBOUND_HOST_REFUSED") && error.details).toEqual({ host: "internal.test", list: "withinHosts" });
    expect(internal.requests.length).toBe(before);
    expect(await refusal(guarded(`http://internal.test:${internal.port}/`))).toBe("AL_ERR_OUTBOUND_HOST_REFUSED");
    // Listed only in withinHosts, a host resolving to loopback stays refused.
    expect(await refusal(guarded(`http://media.cdn.test:${canary.port}/`))).toBe("AL_ERR_OUTBOUND_ADDRESS_REFUSED");
    expect(canary.requests.length).toBe(0);
    expect(() => createGuardedFetch({ withinHosts: "cdn.test" as never })).toThrow(/AL_ERR_OUTBOUND_POLICY/);
  });

  it("sends the caller's headers only to the first origin, and caps redirects", async () => {
    const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["redirector.test", "internal.test"], maxRedirects: 1 });
    const hop = `http://redirector.test:${redirector.port}/?to=${encodeURIComponent(`http://internal.test:${internal.port}/`)}`;
    const response = await guarded(hop, { headers: { authorization: "Bearer secret" } });
    expect(await response.text()).toBe("auth=none");
    const sameOrigin = await guarded(`http://internal.test:${internal.port}/`, { headers: { authorization: "Bearer secret" } });
    expect(await sameOrigin.text()).toBe("auth=Bearer secret");
    const twice = `http://redirector.test:${redirector.port}/?to=${encodeURIComponent(hop)}`;
    expect(await refusal(guarded(twice))).toBe("AL_ERR_OUTBOUND_REDIRECT");
  });

  it("keeps originBoundQuery parameters with the first origin: out of a redirect elsewhere (by name and by value), set again on one within it", async () => {
    const landing = await listen((request, respond) => respond(200, {}, `url=${request.url}`));
    const mover = await listen((request, respond) => {
      const url = new URL(request.url!, "http://x");
      // A service that keeps the query string on a redirect, and one that copies the key under another name.
      if (url.pathname === "/away") respond(301, { location: `http://landing.test:${landing.port}/moved${url.search}&copied=${url.searchParams.get("api_key")}` });
      else if (url.pathname === "/within") respond(302, { location: "/here?page=2" });
      else respond(200, {}, `url=${request.url}`);
    });
    try {
      const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["mover.test", "landing.test"], originBoundQuery: ["api_key"] });
      const away = await guarded(`http://mover.test:${mover.port}/away?api_key=s3cret&q=1`);
      expect(await away.text()).toBe("url=/moved?q=1");
      const within = await guarded(`http://mover.test:${mover.port}/within?api_key=s3cret`);
      expect(await within.text()).toBe("url=/here?page=2&api_key=s3cret");
      expect(landing.requests.map((request) => request.url).join(" ")).not.toContain("s3cret");
    } finally {
      for (const recorder of [landing, mover]) await new Promise((resolve) => recorder.server.close(resolve));
    }
  });

  it("takes a copy of an originBoundQuery value out of a redirect elsewhere, whole or inside a longer value, encoded once or more", async () => {
    const landing = await listen((request, respond) => respond(200, {}, `url=${request.url}`));
    const key = "k+y/s3cret=9";
    const mover = await listen((request, respond) => {
      const url = new URL(request.url!, "http://x");
      const original = `http://mover.test${request.url}`;
      const raw = /[?&]api_key=([^&]*)/.exec(request.url!)![1]!;
      // An SSO bounce (the original URL as return_to), the same one level deeper, the raw text, a fragment.
      const targets: Record<string, string> = {
        "/sso": `/login?return_to=${encodeURIComponent(original)}&lang=en`,
        "/nested": `/login?next=${encodeURIComponent(`http://idp.test/?r=${encodeURIComponent(original)}`)}&lang=en`,
        "/raw": `/x?k=${raw}&lang=en`,
        "/form": `/x?k=${new URLSearchParams({ r: `key ${url.searchParams.get("api_key")}` }).toString().slice(2)}&lang=en`,
        "/fragment": `/x?lang=en#state=${encodeURIComponent(original)}`,
      };
      respond(302, { location: `http://landing.test:${landing.port}${targets[url.pathname]}` });
    });
    try {
      const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["mover.test", "landing.test"], originBoundQuery: ["api_key"] });
      for (const path of ["/sso", "/nested", "/raw", "/form", "/fragment"]) {
        const url = new URL(`http://mover.test:${mover.port}${path}`);
        url.searchParams.set("api_key", key);
        const response = await guarded(url);
        expect(await response.text(), path).toBe(path === "/fragment" ? "url=/x?lang=en" : `url=${path === "/sso" || path === "/nested" ? "/login" : "/x"}?lang=en`);
        expect(response.url, path).not.toContain("#");
      }
      const received = landing.requests.map((request) => request.url!).join(" ");
      for (const form of [key, encodeURIComponent(key), encodeURIComponent(encodeURIComponent(key))]) expect(received).not.toContain(form);
    } finally {
      for (const recorder of [landing, mover]) await new Promise((resolve) => recorder.server.close(resolve));
    }
  });

  it("refuses a redirect elsewhere that carries an originBoundQuery value in its path, naming the origin and never the value", async () => {
    const mover = await listen((request, respond) => {
      const key = new URL(request.url!, "http://x").searchParams.get("api_key")!;
      respond(302, { location: `http://canary.test:${canary.port}/keys/${encodeURIComponent(encodeURIComponent(key))}/view` });
    });
    try {
      const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["mover.test", "canary.test"], originBoundQuery: ["api_key"] });
      const before = canary.requests.length;
      const error = await guarded(`http://mover.test:${mover.port}/?api_key=s3cret-in-path`).then(
        () => undefined,
        (caught: unknown) => caught as Error & { code?: string },
      );
      expect(error?.code).toBe("AL_ERR_OUTBOUND_REDIRECT");
      expect(error!.message).toContain(`http://mover.test:${mover.port} redirected to http://canary.test:${canary.port} with the value of its api_key parameter in the new URL's path`);
      expect(JSON.stringify({ message: error!.message, fix: (error as { fix?: string }).fix, details: (error as { details?: unknown }).details })).not.toContain("s3cret-in-path");
      expect(canary.requests.length).toBe(before);
    } finally {
      await new Promise((resolve) => mover.server.close(resolve));
    }
  });

  it("takes a copy of a header's value (a secret may be sent in any header) out of a redirect elsewhere, and refuses one in its path", async () => {
    const landing = await listen((request, respond) => respond(200, {}, `url=${request.url}`));
    const token = "hdr+s3cret/value=9";
    const basic = Buffer.from(`me:${token}`).toString("base64");
    const mover = await listen((request, respond) => {
      const url = new URL(request.url!, "http://x");
      const key = String(request.headers["x-api-key"] ?? "");
      // A service that copies what it was sent into the URL it sends the caller to: a header's value, a Bearer token or Basic password, a cookie's value.
      const copies: Record<string, string> = {
        "/key": `/cb?token=${encodeURIComponent(key)}&lang=en`,
        "/bearer": `/cb?next=${encodeURIComponent(`http://idp.test/?t=${(request.headers.authorization ?? "").replace(/^Bearer /, "")}`)}&lang=en`,
        "/basic": `/cb?pw=${encodeURIComponent(Buffer.from((request.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString().split(":")[1]!)}&lang=en`,
        "/cookie": `/cb?lang=en#sid=${encodeURIComponent(String(request.headers.cookie).split("=")[1]!)}`,
        "/path": `/cb/${encodeURIComponent(key)}`,
      };
      respond(302, { location: `http://landing.test:${landing.port}${copies[url.pathname]}` });
    });
    try {
      const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["mover.test", "landing.test"] });
      const sent: Record<string, Record<string, string>> = {
        "/key": { "x-api-key": token },
        "/bearer": { authorization: `Bearer ${token}` },
        "/basic": { authorization: `Basic ${basic}` },
        "/cookie": { cookie: `sid=${token}` },
      };
      for (const [path, headers] of Object.entries(sent)) {
        const response = await guarded(`http://mover.test:${mover.port}${path}`, { headers: { ...headers, accept: "application/json", "x-flag": "1" } });
        expect(await response.text(), path).toBe("url=/cb?lang=en");
        expect(response.url, path).not.toContain("s3cret");
      }
      const before = landing.requests.length;
      const error = await guarded(`http://mover.test:${mover.port}/path`, { headers: { "x-api-key": token } }).then(
        () => undefined,
        (caught: unknown) => caught as Error & { code?: string },
      );
      expect(error?.code).toBe("AL_ERR_OUTBOUND_REDIRECT");
      expect(error!.message).toContain(`http://mover.test:${mover.port} redirected to http://landing.test:${landing.port} with the value of its x-api-key header in the new URL's path`);
      expect(JSON.stringify({ message: error!.message, fix: (error as { fix?: string }).fix, details: (error as { details?: unknown }).details })).not.toContain("s3cret");
      expect(landing.requests.length).toBe(before);
      expect(landing.requests.map((request) => request.url).join(" ")).not.toContain("s3cret");
    } finally {
      for (const recorder of [landing, mover]) await new Promise((resolve) => recorder.server.close(resolve));
    }
  });

  it("leaves a redirect elsewhere as the service wrote it when it holds no value of the caller's headers, or only a short or descriptive one", async () => {
    const landing = await listen((request, respond) => respond(200, {}, `url=${request.url}`));
    const mover = await listen((_request, respond) => respond(302, { location: `http://landing.test:${landing.port}/v1/items?page=1&format=application%2Fjson` }));
    try {
      const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["mover.test", "landing.test"] });
      const response = await guarded(`http://mover.test:${mover.port}/`, { headers: { "x-api-key": "unrelated-s3cret", accept: "application/json", "x-page": "1" } });
      expect(await response.text()).toBe("url=/v1/items?page=1&format=application%2Fjson");
    } finally {
      for (const recorder of [landing, mover]) await new Promise((resolve) => recorder.server.close(resolve));
    }
  });

  it("with credentialHosts refuses a first URL outside it unsent, and a redirect to a host outside it carries no credential", async () => {
    const mover = await listen((request, respond) => respond(302, { location: `http://internal.test:${internal.port}/?${new URL(request.url!, "http://x").searchParams}` }));
    try {
      const guarded = createGuardedFetch({ resolve: resolver, allowedHosts: ["mover.test", "internal.test", "canary.test"], credentialHosts: ["mover.test"], originBoundQuery: ["api_key"] });
      const before = canary.requests.length;
      const error = await guarded(`http://canary.test:${canary.port}/?api_key=s3cret`, { headers: { authorization: "Bearer s3cret" } }).then(
        () => undefined,
        (caught: unknown) => caught as Error & { code?: string },
      );
      expect(error).toMatchObject({ code: "AL_ERR_OUTBOUND_HOST_REFUSED", message: expect.stringContaining("host canary.test is not in the policy's credentialHosts") });
      expect(canary.requests.length).toBe(before);
      const followed = await guarded(`http://mover.test:${mover.port}/?api_key=s3cret&q=1`, { headers: { authorization: "Bearer s3cret" } });
      expect(await followed.text()).toBe("auth=none");
      expect(internal.requests.at(-1)!.url).toBe("/?q=1");
    } finally {
      await new Promise((resolve) => mover.server.close(resolve));
    }
  });

  it("refuses a policy it cannot honour", () => {
    expect(() => createGuardedFetch({ maxRedirects: -1 })).toThrow(/AL_ERR_OUTBOUND_POLICY/);
    expect(() => createGuardedFetch({ allowedHosts: [""] })).toThrow(/AL_ERR_OUTBOUND_POLICY/);
    expect(() => createGuardedFetch({ credentialHosts: [""] })).toThrow(/AL_ERR_OUTBOUND_POLICY/);
  });
});

describe("classifyAddress", () => {
  it("classifies every special range and IPv6 forms that carry an IPv4 address", () => {
    const expected: Record<string, string> = {
      "127.0.0.1": "loopback",
      "10.1.2.3": "private",
      "172.20.0.1": "private",
      "192.168.1.1": "private",
      "169.254.169.254": "metadata",
      "169.254.1.1": "linkLocal",
      "100.64.0.1": "carrierGradeNat",
      "0.0.0.0": "unspecified",
      "255.255.255.255": "broadcast",
      "224.0.0.1": "multicast",
      "240.0.0.1": "reserved",
      "192.0.2.1": "reserved",
      "::1": "loopback",
      "::": "unspecified",
      "fd12::1": "uniqueLocal",
      "fe80::1": "linkLocal",
      "fec0::1": "deprecatedSiteLocal",
      "ff02::1": "multicast",
      "::ffff:127.0.0.1": "ipv4Mapped",
      "::7f00:1": "ipv4Compatible",
      "64:ff9b::7f00:1": "rfc6052",
      "64:ff9b:1::1": "rfc6052",
      "2002:7f00:1::": "6to4",
      "2001::1": "teredo",
      "not-an-ip": "invalid",
    };
    const got = Object.fromEntries(Object.keys(expected).map((address) => [address, classifyAddress(address).range]));
    expect(got).toEqual(expected);
    expect(Object.keys(expected).filter((address) => classifyAddress(address).public)).toEqual([]);
    expect(classifyAddress("::ffff:a9fe:a9fe").embedded).toMatchObject({ address: "169.254.169.254", range: "metadata" });
    expect(classifyAddress("::7f00:1").embedded).toMatchObject({ address: "127.0.0.1", range: "loopback" });
  });

  it("leaves ordinary public addresses public", () => {
    expect(["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "2a00:1450:4001::1"].map((address) => classifyAddress(address).range)).toEqual(["unicast", "unicast", "unicast", "unicast", "unicast"]);
  });
});
