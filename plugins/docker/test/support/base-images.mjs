// Base images for the Docker suites, made locally with `docker import` (no image
// registry is reachable): a busybox rootfs, and the same plus the host's node
// binary with every library it links. Tagged by a hash of their contents, so an
// image already on the engine is reused instead of imported again.
// Run directly (`node base-images.mjs`) to import them ahead of a test run.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import Docker from "dockerode";

const RECIPE = 2;
/** A file only these images have: tests read it to prove a command ran in the container. */
export const IMAGE_MARKER = "/etc/assembly-line-test-image";

function which(name) {
  return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
}

function hashFiles(files) {
  const hash = createHash("sha256").update(`recipe ${RECIPE}\n`);
  for (const file of files) hash.update(file).update(readFileSync(file));
  return hash.digest("hex").slice(0, 16);
}

function nodeLibraries(node) {
  const out = execFileSync("ldd", [node], { encoding: "utf8" });
  const libs = [];
  for (const line of out.split("\n")) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match) libs.push(match[1]);
  }
  return libs;
}

function copyKeepingPath(root, file) {
  const target = join(root, file);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(realpathSync(file), target);
}

function busyboxRootfs(root, flavour) {
  const busybox = which("busybox");
  mkdirSync(join(root, "bin"), { recursive: true });
  copyFileSync(busybox, join(root, "bin", "busybox"));
  const applets = execFileSync(busybox, ["--list"], { encoding: "utf8" }).split("\n").filter(Boolean);
  for (const applet of applets) if (applet !== "busybox") symlinkSync("busybox", join(root, "bin", applet));
  for (const dir of ["tmp", "etc", "root", "proc", "sys", "dev", "usr/bin"]) mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, "etc", "passwd"), "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n");
  writeFileSync(join(root, "etc", "group"), "root:x:0:\nnogroup:x:65534:\n");
  writeFileSync(join(root, IMAGE_MARKER.slice(1)), `assembly-line test image: ${flavour}\n`);
  // Scripts written for bash still find an interpreter.
  symlinkSync("/bin/sh", join(root, "bin", "bash"));
}

async function importRootfs(docker, root, repo, tag, changes) {
  const tar = spawn("tar", ["-C", root, "-cf", "-", "."], { stdio: ["ignore", "pipe", "inherit"] });
  const stream = await docker.importImage(tar.stdout, { repo, tag, changes });
  await new Promise((resolve, reject) => docker.modem.followProgress(stream, (error) => (error ? reject(error) : resolve())));
}

async function present(docker, reference) {
  try {
    await docker.getImage(reference).inspect();
    return true;
  } catch {
    return false;
  }
}

/** Import the base images if missing; returns their references. */
export async function ensureBaseImages(docker = new Docker()) {
  const busybox = which("busybox");
  const node = realpathSync(process.execPath);
  const libs = nodeLibraries(node);
  const busyboxRef = `assembly-line-test/busybox:${hashFiles([busybox])}`;
  const nodeRef = `assembly-line-test/node:${hashFiles([busybox, node, ...libs])}`;
  if (!(await present(docker, busyboxRef))) {
    const root = mkdtempSync(join(tmpdir(), "al-rootfs-busybox-"));
    try {
      busyboxRootfs(root, "busybox");
      const [repo, tag] = busyboxRef.split(":");
      await importRootfs(docker, root, repo, tag, ['CMD ["/bin/sh"]', "ENV PATH=/usr/local/bin:/usr/bin:/bin"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  if (!(await present(docker, nodeRef))) {
    const root = mkdtempSync(join(tmpdir(), "al-rootfs-node-"));
    try {
      busyboxRootfs(root, "node");
      mkdirSync(join(root, "usr", "local", "bin"), { recursive: true });
      copyFileSync(node, join(root, "usr", "local", "bin", "node"));
      for (const lib of libs) copyKeepingPath(root, lib);
      if (existsSync("/etc/ssl/certs/ca-certificates.crt")) copyKeepingPath(root, "/etc/ssl/certs/ca-certificates.crt");
      const [repo, tag] = nodeRef.split(":");
      await importRootfs(docker, root, repo, tag, ['CMD ["node"]', "ENV PATH=/usr/local/bin:/usr/bin:/bin"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  return { busybox: busyboxRef, node: nodeRef };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const refs = await ensureBaseImages();
  console.log(JSON.stringify(refs));
}
