// Container images for the real node, none from a registry: the pod sandbox's pause (a static C
// binary), a busybox image for test pods and plugin init containers, a Debian + Node 24 base, and the
// app image built from the shipped Dockerfile by buildah FROM that base. Each is a docker-archive
// tarball cached under ~/.cache/stowage/images, keyed by what it is made from.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cacheBase, ensureRuntimeNode, RUNTIME_NODE_VERSION } from '../node-runtime.mjs';
import { run } from './hostState.js';

export const PAUSE_IMAGE = 'local.invalid/pause:stowage';
export const BUSYBOX_IMAGE = 'local.invalid/busybox:stowage';
export const BASE_IMAGE = `local.invalid/node:${RUNTIME_NODE_VERSION.split('.')[0]}-bookworm-slim`;
/** The app image under its local name and under the name the chart's default values give (stowage:<appVersion>). */
export const APP_IMAGE = 'local.invalid/stowage:0.1.0';
export const APP_IMAGE_DEFAULT_NAME = 'docker.io/library/stowage:0.1.0';

const REPO = path.resolve(import.meta.dirname, '../..');

/** Bumped when baseImage's recipe changes, so a cached base made the old way is not reused. */
const BASE_REVISION = 2;

export function imagesDir(): string {
  return path.join(cacheBase(), 'images');
}

export interface ImageConfig {
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  User?: string;
}

function sha256File(file: string): string {
  const h = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(1 << 20);
  for (let n = fs.readSync(fd, buf); n > 0; n = fs.readSync(fd, buf)) h.update(buf.subarray(0, n));
  fs.closeSync(fd);
  return h.digest('hex');
}

/** Packs a root directory as a one-layer docker-archive (what `ctr images import` and buildah read). */
export function packImage(rootfs: string, tags: string[], config: ImageConfig, out: string): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-img-'));
  try {
    run('tar', ['--numeric-owner', '--sort=name', '-C', rootfs, '-cf', path.join(dir, 'layer.tar'), '.']);
    const diffId = sha256File(path.join(dir, 'layer.tar'));
    const cfg = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config,
      rootfs: { type: 'layers', diff_ids: [`sha256:${diffId}`] },
    });
    const cfgName = `${crypto.createHash('sha256').update(cfg).digest('hex')}.json`;
    fs.writeFileSync(path.join(dir, cfgName), cfg);
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify([{ Config: cfgName, RepoTags: tags, Layers: ['layer.tar'] }]));
    const tmp = `${out}.partial-${process.pid}`;
    run('tar', ['-C', dir, '-cf', tmp, 'manifest.json', cfgName, 'layer.tar']);
    fs.renameSync(tmp, out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Copies a binary and every shared library `ldd` names for it, at the same paths, into rootfs. */
function copyWithLibs(rootfs: string, bin: string, at = bin): void {
  copyFile(bin, path.join(rootfs, at));
  const r = spawnSync('ldd', [bin], { encoding: 'utf8' });
  if (r.status !== 0) return; // static binary
  for (const line of r.stdout.split('\n')) {
    const lib = /=>\s*(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)/.exec(line)?.[1];
    if (lib !== undefined) copyFile(lib, path.join(rootfs, lib));
  }
}

function copyFile(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(fs.realpathSync(from), to);
  fs.chmodSync(to, fs.statSync(fs.realpathSync(from)).mode & 0o7777);
}

/** busybox-static as /bin/busybox plus one symlink per applet: a shell and the usual tools. */
export function addBusybox(rootfs: string): void {
  copyFile('/bin/busybox', path.join(rootfs, 'bin/busybox'));
  const applets = run('/bin/busybox', ['--list-full']).split('\n').filter((a) => a !== '');
  for (const a of applets) {
    const p = path.join(rootfs, a);
    if (fs.existsSync(p)) continue;
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.symlinkSync('/bin/busybox', p);
  }
}

export function addEtc(rootfs: string): void {
  fs.mkdirSync(path.join(rootfs, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\nnonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n');
  fs.writeFileSync(path.join(rootfs, 'etc/group'), 'root:x:0:\nnode:x:1000:\nnonroot:x:65532:\n');
  for (const d of ['tmp', 'root', 'proc', 'sys', 'dev', 'run', 'var/tmp']) fs.mkdirSync(path.join(rootfs, d), { recursive: true });
  fs.chmodSync(path.join(rootfs, 'tmp'), 0o1777);
  fs.chmodSync(path.join(rootfs, 'var/tmp'), 0o1777);
}

/** Builds (when missing) an image tarball under the cache; `make` fills a fresh root directory. */
export function cachedImage(file: string, what: string, log: (l: string) => void, make: (rootfs: string) => { tags: string[]; config: ImageConfig }): string {
  const out = path.join(imagesDir(), file);
  if (fs.existsSync(out)) return out;
  fs.mkdirSync(imagesDir(), { recursive: true });
  const t0 = Date.now();
  log(`=== node: making the ${what} image (${file})`);
  const rootfs = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-rootfs-'));
  try {
    const { tags, config } = make(rootfs);
    packImage(rootfs, tags, config, out);
  } finally {
    fs.rmSync(rootfs, { recursive: true, force: true });
  }
  log(`=== node: ${what} image ready, ${(fs.statSync(out).size / 1e6).toFixed(1)} MB (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  return out;
}

export function pauseImage(log: (l: string) => void): string {
  const src = path.join(import.meta.dirname, 'pause.c');
  const key = crypto.createHash('sha256').update(fs.readFileSync(src)).digest('hex').slice(0, 12);
  return cachedImage(`pause-${key}.tar`, 'pause', log, (rootfs) => {
    run('gcc', ['-static', '-Os', '-s', '-o', path.join(rootfs, 'pause'), src]);
    return { tags: [PAUSE_IMAGE], config: { Entrypoint: ['/pause'] } };
  });
}

export function busyboxImage(log: (l: string) => void): string {
  const version = run('dpkg-query', ['-W', '-f=${Version}', 'busybox-static']).trim();
  return cachedImage(`busybox-${version.replace(/[^\w.+-]/g, '_')}.tar`, 'busybox', log, (rootfs) => {
    addBusybox(rootfs);
    addEtc(rootfs);
    return { tags: [BUSYBOX_IMAGE], config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['sh'] } };
  });
}

/**
 * The Dockerfile's base made locally: this machine's Debian libraries, busybox for the shell,
 * coreutils' `install` (busybox-static has none; the Dockerfile uses it), the image's Node and npm.
 */
export function baseImage(log: (l: string) => void): string {
  const npmDir = path.dirname(path.dirname(fs.realpathSync(run('sh', ['-c', 'command -v npm']).trim())));
  const npmVersion = (JSON.parse(fs.readFileSync(path.join(npmDir, 'package.json'), 'utf8')) as { version: string }).version;
  return cachedImage(`node-${RUNTIME_NODE_VERSION}-npm-${npmVersion}-r${BASE_REVISION}.tar`, 'Debian + Node base', log, (rootfs) => {
    addBusybox(rootfs);
    addEtc(rootfs);
    copyWithLibs(rootfs, '/usr/bin/install');
    copyWithLibs(rootfs, ensureRuntimeNode({ log }), '/usr/local/bin/node');
    fs.mkdirSync(path.join(rootfs, 'usr/local/lib/node_modules'), { recursive: true });
    run('cp', ['-a', npmDir, path.join(rootfs, 'usr/local/lib/node_modules/npm')]);
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(rootfs, 'usr/local/bin/npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(rootfs, 'usr/local/bin/npx'));
    // npm reaches the registry over TLS through whatever this machine trusts (a proxy's CA
    // included): its global npmrc names the machine's bundle. npm only: node's own TLS is untouched.
    copyFile('/etc/ssl/certs/ca-certificates.crt', path.join(rootfs, 'etc/ssl/certs/ca-certificates.crt'));
    fs.mkdirSync(path.join(rootfs, 'usr/local/etc'), { recursive: true });
    fs.writeFileSync(path.join(rootfs, 'usr/local/etc/npmrc'), 'cafile=/etc/ssl/certs/ca-certificates.crt\nupdate-notifier=false\n');
    copyFile('/etc/os-release', path.join(rootfs, 'etc/os-release'));
    return {
      tags: [BASE_IMAGE],
      config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', `NODE_VERSION=${RUNTIME_NODE_VERSION}`], Cmd: ['node'] },
    };
  });
}

/** Files the Dockerfile's build reads (its context after .dockerignore), hashed for the cache key. */
function contextHash(): string {
  const files = run('git', ['-C', REPO, 'ls-files', '-co', '--exclude-standard', 'Dockerfile', '.dockerignore', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'deploy/crds', 'scripts/helm/upgrade-crds.mjs', 'scripts/image'])
    .split('\n').filter((f) => f !== '' && !f.endsWith('.test.ts') && fs.existsSync(path.join(REPO, f))).sort();
  const h = crypto.createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(fs.readFileSync(path.join(REPO, f))).update('\0');
  return h.digest('hex').slice(0, 16);
}

/**
 * The shipped Dockerfile built as shipped, by Debian's buildah, FROM the local base (the
 * NODE_IMAGE build argument). Returns the docker-archive and the image's size in bytes.
 */
export function appImage(log: (l: string) => void): { tar: string; key: string } {
  const key = contextHash();
  const out = path.join(imagesDir(), `stowage-${key}.tar`);
  if (fs.existsSync(out)) return { tar: out, key };
  const base = baseImage(log);
  const store = path.join(cacheBase(), 'buildah');
  const b = ['--root', path.join(store, 'root'), '--runroot', path.join(store, 'runroot'), '--storage-driver', 'vfs'];
  const t0 = Date.now();
  log(`=== node: buildah bud of the Dockerfile (context ${key}; npm ci twice and tsc inside, a few minutes)`);
  run('buildah', [...b, 'pull', '--quiet', `docker-archive:${base}`]);
  const logFile = path.join(imagesDir(), `stowage-${key}.build.log`);
  const r = spawnSync('buildah', [...b, 'bud', '--isolation', 'chroot', '--network', 'host', '--layers=false', '--pull-never',
    '--build-arg', `NODE_IMAGE=${BASE_IMAGE}`, '-t', APP_IMAGE, '-f', path.join(REPO, 'Dockerfile'), REPO], { encoding: 'utf8', maxBuffer: 64 << 20 });
  fs.writeFileSync(logFile, `${r.stdout}${r.stderr}`);
  if (r.status !== 0) throw new Error(`buildah bud of the Dockerfile failed (log ${logFile}): ${`${r.stdout}${r.stderr}`.trim().split('\n').slice(-5).join(' | ')}`);
  const tmp = `${out}.partial-${process.pid}`;
  fs.rmSync(tmp, { force: true });
  run('buildah', [...b, 'push', '--quiet', APP_IMAGE, `docker-archive:${tmp}:${APP_IMAGE}`]);
  fs.renameSync(tmp, out);
  // The build's intermediate containers and images only take disk; the tarball is the cache.
  spawnSync('buildah', [...b, 'rm', '--all']);
  spawnSync('buildah', [...b, 'rmi', '--all', '--force']);
  log(`=== node: app image built (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  return { tar: out, key };
}
