// The Node.js the image ships (the Dockerfile's node:24 base), for `npm test` and `npm run demo` on a
// machine whose own node is another major. It comes from the npm registry (the node-linux-<arch>
// package carries the official binary), through npm's own client, and is cached beside the control
// plane binaries. Plain JavaScript: test.mjs and run-ts.mjs load it without tsx.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Pinned so every run tests the same binary; the major must match the Dockerfile's (test/deploy/dockerfile.test.ts). */
export const RUNTIME_NODE_VERSION = '24.22.3';
export const RUNTIME_NODE_MAJOR = Number(RUNTIME_NODE_VERSION.split('.')[0]);

// npm checks these too (against the registry's metadata); pinning them here also catches a
// registry or mirror that serves a different tarball under the same version.
const INTEGRITY = {
  x64: 'sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==',
  arm64: 'sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==',
};

/** The cache root scripts/cluster/paths.ts uses: $STOWAGE_CACHE_DIR, else $XDG_CACHE_HOME/stowage, else ~/.cache/stowage. */
export function cacheBase(env = process.env) {
  return env.STOWAGE_CACHE_DIR ?? path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'stowage');
}

export function runtimeNodeDir(env = process.env, arch = process.arch) {
  return path.join(cacheBase(env), `node-v${RUNTIME_NODE_VERSION}-linux-${arch}`);
}

function fail(reason) {
  return new Error(
    `Node.js ${RUNTIME_NODE_VERSION} (the image's runtime) could not be provisioned: ${reason}. ` +
      `It comes from the npm registry as node-linux-${process.arch}@${RUNTIME_NODE_VERSION}; ` +
      `check that \`npm view node-linux-${process.arch}@${RUNTIME_NODE_VERSION}\` works, or run on Node ${RUNTIME_NODE_MAJOR}.`,
  );
}

/** The one line of npm's error report that says what went wrong (npm prints the stack and hints as well). */
export function npmErrorOf(stderr) {
  const lines = `${stderr ?? ''}`.split('\n').map((l) => l.replace(/^npm (error|ERR!) ?/, '').trim());
  const what = lines.find((l) => l !== '' && !/^(code|syscall|errno|at|address|port|type)\b|^[{}]/.test(l));
  const code = lines.map((l) => /^code (\S+)/.exec(l)?.[1]).find((c) => c !== undefined);
  if (what === undefined) return code ?? 'no error message';
  return code === undefined || what.includes(code) ? what : `${code}: ${what}`;
}

function versionOf(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/**
 * The path of a node binary of the image's major: this process's own when it already is one,
 * else the cached download, fetched first when missing. Throws with the reason when it cannot be had.
 */
export function ensureRuntimeNode({ env = process.env, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  if (Number(process.versions.node.split('.')[0]) === RUNTIME_NODE_MAJOR) return process.execPath;
  if (process.platform !== 'linux' || !(process.arch in INTEGRITY)) {
    throw fail(`no pinned build for ${process.platform}-${process.arch} (linux x64 and arm64 only)`);
  }
  const dir = runtimeNodeDir(env);
  const bin = path.join(dir, 'bin', 'node');
  if (versionOf(bin) === `v${RUNTIME_NODE_VERSION}`) return bin;

  const pkg = `node-linux-${process.arch}@${RUNTIME_NODE_VERSION}`;
  log(`=== fetching Node.js ${RUNTIME_NODE_VERSION} (${pkg} from the npm registry, ~50 MB) into ${dir}`);
  const t0 = Date.now();
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // A sibling temporary directory, renamed into place at the end: a killed or concurrent fetch
  // never leaves a half-written binary where the check above would find it.
  const tmp = fs.mkdtempSync(`${dir}.partial-`);
  try {
    const pack = spawnSync('npm', ['pack', pkg, '--json', '--pack-destination', tmp], { encoding: 'utf8', env });
    if (pack.error !== undefined) throw fail(`npm could not be run (${pack.error.message})`);
    if (pack.status !== 0) {
      throw fail(`npm pack ${pkg} failed (exit ${pack.status ?? pack.signal}): ${npmErrorOf(pack.stderr)}`);
    }
    let packed;
    try {
      packed = JSON.parse(pack.stdout)[0];
    } catch {
      throw fail(`npm pack ${pkg} printed no JSON report`);
    }
    if (packed?.integrity !== INTEGRITY[process.arch]) {
      throw fail(`${pkg} has integrity ${packed?.integrity}, expected the pinned ${INTEGRITY[process.arch]}`);
    }
    const untar = spawnSync('tar', ['-xzf', path.join(tmp, packed.filename), '-C', tmp, '--strip-components=1', 'package/bin/node', 'package/LICENSE'], { encoding: 'utf8' });
    if (untar.status !== 0) throw fail(`tar could not unpack ${packed.filename}: ${(untar.stderr ?? untar.error?.message ?? '').trim()}`);
    fs.rmSync(path.join(tmp, packed.filename));
    const got = versionOf(path.join(tmp, 'bin', 'node'));
    if (got !== `v${RUNTIME_NODE_VERSION}`) throw fail(`the unpacked binary reports ${got ?? 'nothing (it does not run here)'}`);
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(tmp, dir);
    } catch (e) {
      // Another process put the same version in place first; use its copy.
      if (versionOf(bin) !== `v${RUNTIME_NODE_VERSION}`) throw fail(`could not move it into ${dir}: ${e.message}`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  log(`=== Node.js ${RUNTIME_NODE_VERSION} ready (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  return bin;
}

/** Environment for a child running on `nodeBin`: its directory first on PATH, so `node` and `#!/usr/bin/env node` scripts (npm, npx) run on it too. */
export function runtimeEnv(nodeBin, env = process.env) {
  return { ...env, PATH: `${path.dirname(nodeBin)}${path.delimiter}${env.PATH ?? ''}` };
}
