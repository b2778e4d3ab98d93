// Checks the Dockerfile without a Docker engine: every stage is simulated into a directory standing
// in for the image (see dockerfile.ts), the runtime stage from a clean `npm ci --omit=dev`, and its
// ENTRYPOINT is then run as the image's user and must print `stowage --help`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, createDynamicClient, type KubeObject } from '../../src/kube/index.js';
import { helmTemplate } from '../../scripts/helm/render.js';
import { adminConfig, uniqueName, waitUntil } from '../support/kube.js';
import {
  buildContext,
  dockerIgnore,
  listTree,
  mapScriptPaths,
  parseDockerfile,
  simulate,
  stagesOf,
  whichInImage,
  type SimulatedStage,
} from './dockerfile.js';
import { applyObjects, deleteObjects, ensureDeployCrds, parseManifestText, serviceAccountClient, serviceAccountConfig } from './manifests.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const stages = stagesOf(parseDockerfile(fs.readFileSync(path.join(REPO, 'Dockerfile'), 'utf8')));
const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

let work = '';
let built: Map<string, SimulatedStage>;
let runtime: SimulatedStage;

/** The image's ENV with image paths mapped into the simulated root, and its PATH first. */
function imageEnv(stage: SimulatedStage): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: `${path.join(stage.root, 'usr/local/bin')}:${process.env.PATH ?? ''}` };
  for (const [k, v] of stage.env) env[k] = mapScriptPaths(v, stage.root);
  return env;
}

function imageUser(stage: SimulatedStage): { uid: number; gid: number } | Record<string, never> {
  const [u, g] = (stage.user ?? '0').split(':');
  // Only root can switch users; elsewhere the command runs as the test's own user.
  return process.getuid?.() === 0 ? { uid: Number(u), gid: Number(g ?? u) } : {};
}

function runInImage(stage: SimulatedStage, argv: string[]): { status: number | null; stdout: string; stderr: string } {
  const [cmd, ...args] = argv;
  const exe = cmd?.includes('/') ? path.join(stage.root, cmd) : whichInImage(stage, cmd ?? '');
  if (exe === undefined) throw new Error(`${cmd ?? '(empty)'} is not on the image's PATH`);
  const r = spawnSync(exe, args, { cwd: path.join(stage.root, stage.workdir), env: imageEnv(stage), encoding: 'utf8', timeout: 30_000, ...imageUser(stage) });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-docker-'));
  // The image user must be able to traverse down to the simulated root.
  fs.chmodSync(work, 0o755);
  const context = path.join(work, 'context');
  buildContext(REPO, context);
  built = simulate(stages, { repo: REPO, context, workDir: work });
  const last = stages.at(-1);
  const rt = last === undefined ? undefined : built.get(last.name);
  if (rt === undefined) throw new Error('the Dockerfile has no stages');
  runtime = rt;
  // The simulated entrypoint script refers to image paths; map them into the simulated root.
  const entry = whichInImage(runtime, runtime.entrypoint[0] ?? '');
  if (entry !== undefined && fs.readFileSync(entry, 'utf8').startsWith('#!')) {
    fs.writeFileSync(entry, mapScriptPaths(fs.readFileSync(entry, 'utf8'), runtime.root));
  }
}, 600_000);

afterAll(() => {
  if (work !== '') fs.rmSync(work, { recursive: true, force: true });
});

describe('Dockerfile', () => {
  it('is multi-stage and the runtime stage is Node 24 LTS (slim), non-root by numeric UID, entrypoint stowage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(runtime.from).toMatch(/^node:24(\.\d+)*-(bookworm|trixie)-slim(@sha256:[0-9a-f]{64})?$/);
    expect(runtime.user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(runtime.entrypoint).toEqual(['stowage']);
    expect(runtime.cmd).toEqual(['server']);
    expect(runtime.exposed).toContain('8085');
    // Built-in plugins are served by the same binary (`stowage run-plugins`); third-party ones in /plugins.
    expect(runtime.env.get('STOWAGE_PLUGIN_DIR')).toBe('/plugins');
    expect(fs.statSync(path.join(runtime.root, 'plugins')).isDirectory()).toBe(true);
  });

  it("runs the integration tests, and the processes they spawn, on the image's Node major", () => {
    // scripts/test.mjs runs this suite on the node of scripts/node-runtime.mjs; the unit test
    // scripts/node-runtime.test.ts ties that pin to the same ARG.
    const imageMajor = /^node:(\d+)/.exec(runtime.from)?.[1];
    expect(imageMajor).toBeDefined();
    expect(`v${process.versions.node}`).toMatch(new RegExp(`^v${imageMajor}\\.`));
    // Spawned servers use process.execPath; `node`, npm and npx found on PATH (the image's
    // entrypoint script, `#!/usr/bin/env node`) must resolve to the same binary.
    const onPath = spawnSync('node', ['-p', 'process.version + " " + process.execPath'], { encoding: 'utf8' });
    const [version, exec] = onPath.stdout.trim().split(' ');
    expect(version).toBe(process.version);
    expect(fs.realpathSync(exec ?? '')).toBe(fs.realpathSync(process.execPath));
  });

  it('builds dist/ in the build stage from what the build context holds', () => {
    const build = [...built.values()].find((s) => s.runs.some((r) => r.startsWith('npm run build')));
    expect(build, 'a stage runs npm run build').toBeDefined();
    expect(fs.existsSync(path.join(build?.root ?? '', build?.workdir ?? '', 'dist/cli/bin.js'))).toBe(true);
    // Every COPY of the runtime stage succeeded, so every path it names existed after the build.
    expect(runtime.copies.map((c) => `${c.from}:${c.sources.join(',')}`)).toEqual(
      expect.arrayContaining(['context:package.json', 'build:/src/dist', 'context:deploy/crds', 'deps:/app/node_modules']),
    );
  });

  it('ships production dependencies only, installed by npm ci --omit=dev from the lockfile', () => {
    const runs = [...built.values()].flatMap((s) => s.runs);
    expect(runs.some((r) => r.startsWith('npm ci') && r.includes('--omit=dev') && r.endsWith('(run for real)'))).toBe(true);
    const nm = path.join(runtime.root, runtime.workdir, 'node_modules');
    for (const dep of Object.keys(pkg.dependencies)) expect(fs.existsSync(path.join(nm, dep)), `${dep} is installed`).toBe(true);
    for (const dev of ['typescript', 'vitest', 'eslint', 'tsx', 's3rver', 'ts-proto']) {
      expect(Object.keys(pkg.devDependencies)).toContain(dev);
      expect(fs.existsSync(path.join(nm, dev)), `${dev} (dev only) is absent`).toBe(false);
    }
    // No TypeScript sources or tests in the image, and the CRDs exactly as in the repository.
    const app = listTree(path.join(runtime.root, runtime.workdir)).filter((f) => !f.startsWith('node_modules/'));
    expect(app.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(app.filter((f) => f.includes('.test.'))).toEqual([]);
    const crds = fs.readdirSync(path.join(REPO, 'deploy/crds')).sort();
    expect(fs.readdirSync(path.join(runtime.root, runtime.workdir, 'deploy/crds')).sort()).toEqual(crds);
    for (const f of crds) {
      expect(fs.readFileSync(path.join(runtime.root, runtime.workdir, 'deploy/crds', f), 'utf8')).toBe(fs.readFileSync(path.join(REPO, 'deploy/crds', f), 'utf8'));
    }
  });

  it('runs the ENTRYPOINT from the clean production install as the image user: stowage --help', () => {
    const r = runInImage(runtime, [...runtime.entrypoint, '--help']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: stowage');
  });

  it('leaves only the scratch and spool directories writable for the image user', () => {
    const writable = ['HOME', 'TMPDIR', 'STOWAGE_SCRATCH_DIR', 'STOWAGE_LOG_SPOOL_DIR'].map((k) => runtime.env.get(k) ?? '');
    expect(new Set(writable)).toEqual(new Set(['/scratch', '/var/spool/stowage']));
    // A host shell touching a file as the image user: root-owned image paths must refuse it, as a
    // read-only root filesystem would.
    const sh = (dir: string): number | null =>
      spawnSync('/bin/sh', ['-c', `touch "${path.join(runtime.root, dir)}/.probe" 2>/dev/null`], { ...imageUser(runtime) }).status;
    expect(sh('/scratch')).toBe(0);
    expect(sh('/var/spool/stowage')).toBe(0);
    if (process.getuid?.() === 0) {
      for (const dir of ['/app', '/app/dist', '/plugins', '/usr/local/bin']) expect(sh(dir), `${dir} is read-only for the image user`).not.toBe(0);
    }
  });
});

describe('.dockerignore', () => {
  const { ignored } = dockerIgnore(fs.readFileSync(path.join(REPO, '.dockerignore'), 'utf8'));

  it('keeps what the build copies and drops the rest', () => {
    for (const p of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src/cli/bin.ts', 'deploy/crds/backups.stowage.dev.yaml', 'scripts/helm/upgrade-crds.mjs']) {
      expect(ignored(p), p).toBe(false);
    }
    for (const p of ['node_modules/x/index.js', '.git/config', 'dist/cli/bin.js', 'test/deploy/dockerfile.test.ts', 'src/util/errors.test.ts', 'charts/stowage/values.yaml', 'deploy/30-deployment.yaml', '.env', 'x/creds.pem', 'scripts/helm/render.sh']) {
      expect(ignored(p), p).toBe(true);
    }
  });
});

describe('the chart\'s upgradeCRDs hook, run from the image', () => {
  it('server-side applies the image\'s CRDs with the hook\'s own, narrow ServiceAccount', async () => {
    const admin = adminConfig();
    const client = createDynamicClient(admin, { qps: 0 });
    const ns = uniqueName('stowage-hook');
    const release = uniqueName('stw');
    await client.create(CORE.namespaces, undefined, { metadata: { name: ns } });
    const rendered = parseManifestText(await helmTemplate({ chartDir: path.join(REPO, 'charts/stowage'), releaseName: release, namespace: ns }), 'chart');
    const hooks = rendered.map((r) => r.object).filter((o) => o.metadata?.annotations?.['helm.sh/hook'] === 'pre-upgrade');
    const job = hooks.find((o) => o.kind === 'Job') as KubeObject & { spec: { template: { spec: { serviceAccountName: string; containers: { command: string[] }[] } } } };
    const rbac = hooks.filter((o) => o.kind !== 'Job');
    try {
      await ensureDeployCrds(client);
      await applyObjects(client, rbac);
      const saName = job.spec.template.spec.serviceAccountName;
      const sa = await serviceAccountClient(admin, ns, saName);
      await waitUntil('the hook binding to take effect', async () => {
        await sa.get(CUSTOM_RESOURCE_DEFINITIONS, undefined, 'backups.stowage.dev');
        return true;
      }, 30_000);
      // Nothing but Stowage's CRDs: another CRD may not even be read.
      await expect(sa.get(CUSTOM_RESOURCE_DEFINITIONS, undefined, 'servicemonitors.monitoring.coreos.com')).rejects.toThrow(/forbidden/);

      const kubeconfig = path.join(work, 'hook.kubeconfig');
      fs.writeFileSync(kubeconfig, (await serviceAccountConfig(admin, ns, saName)).exportConfig(), { mode: 0o644 });
      // The Job's command, with image paths mapped into the simulated image (node is the host's).
      const [cmd, ...args] = job.spec.template.spec.containers[0]?.command ?? [];
      expect(cmd).toBe('node');
      const r = spawnSync('node', args.map((a) => mapScriptPaths(a, runtime.root)), {
        cwd: path.join(runtime.root, runtime.workdir),
        env: { ...imageEnv(runtime), KUBECONFIG: kubeconfig },
        encoding: 'utf8',
        timeout: 60_000,
        ...imageUser(runtime),
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const crds = fs.readdirSync(path.join(REPO, 'deploy/crds')).map((f) => f.replace(/\.yaml$/, ''));
      for (const name of crds) {
        expect(r.stdout).toContain(`applied ${name}`);
        const crd = await client.get<KubeObject & { metadata: { managedFields?: { manager?: string; operation?: string }[] } }>(CUSTOM_RESOURCE_DEFINITIONS, undefined, name);
        expect(crd.metadata.managedFields?.some((m) => m.manager === 'stowage-upgrade-crds' && m.operation === 'Apply'), name).toBe(true);
      }
    } finally {
      await deleteObjects(client, rbac);
      await client.delete(CORE.namespaces, undefined, ns);
      client.close();
    }
  });
});
