// `stowage restore` against a running server: a dry run that reports what would be created and
// writes nothing, a real restore into a mapped namespace with --wait, then get, describe and logs;
// the location signs (the test key), so each restore verifies the backup's signature first.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Restore } from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { SIGNED, ensureNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type RunOptions } from './helpers.js';

const QUOTAS = { group: '', version: 'v1', resource: 'resourcequotas', namespaced: true };

describe('stowage restore with a running server', () => {
  const ns = uniqueName('cli-rs');
  const app = uniqueName('cli-rsapp');
  const dryTarget = uniqueName('cli-dry');
  const copy = uniqueName('cli-copy');
  const loc = filesystemLocation('default', SIGNED);
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureNamespace(client, app);
    for (let i = 0; i < 5; i++) await client.create(CORE.configMaps, app, { metadata: { name: `cm-${i}`, labels: { app: 'web' } }, data: { i: String(i) } });
    await client.create(CORE.services, app, { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }], selector: { app: 'web' } } });
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc });
    opts = { kubeconfig, namespace: ns };
    const b = await cli('backup', 'create', 'src', '--include-namespaces', app, '--wait');
    expect(b.code, show(b)).toBe(0);
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('runs a dry run: describe shows what would be created and why, and nothing is written', async () => {
    const r = await cli('restore', 'create', 'dry', '--from-backup', 'src', '--dry-run', '--namespace-mappings', `${app}:${dryTarget}`, '--wait');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Restore request "dry" submitted successfully (dry run: nothing will be written to the cluster).');
    expect(r.stdout).toMatch(/Restore completed with status: Completed \(would create \d+, would update 0, would skip \d+, would fail 0\)/);
    const d = await cli('restore', 'describe', 'dry');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^Phase:\s+Completed \(dry run\)$/m);
    expect(d.stdout).toContain('Plan (dry run: nothing was written to the cluster):');
    expect(d.stdout).toMatch(/^ {2}Would be created \(\d+\):$/m);
    // The namespace would be created first, so its items cannot be validated: said once per item.
    for (let i = 0; i < 5; i++) {
      const line = d.stdout.split('\n').find((l) => l.startsWith(`    configmaps ${dryTarget}/cm-${i}`)) ?? '';
      expect(line).toBe(`    configmaps ${dryTarget}/cm-${i}: would be created; not validated by the API server, as namespace ${dryTarget} would be created first`);
    }
    for (const line of d.stdout.split('\n')) expect(line.match(/not validated/g)?.length ?? 0, line).toBeLessThanOrEqual(1);
    expect(d.stdout).toContain(`    services ${dryTarget}/web`);
    await expect(client.get(CORE.namespaces, undefined, dryTarget)).rejects.toSatisfy(isNotFound);
  });

  it('a dry run that predicts failures completes, exits 0 and says "would fail"', async () => {
    const target = uniqueName('cli-quota');
    await ensureNamespace(client, target);
    // The quota is computed when it is created: kube-root-ca.crt must be there by then to count.
    await waitUntil('the root CA ConfigMap', async () => (await client.get(CORE.configMaps, target, 'kube-root-ca.crt').then(() => true, () => undefined)));
    // A quota the namespace's own kube-root-ca.crt already fills: no ConfigMap of the backup would be admitted.
    await client.create(QUOTAS, target, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { configmaps: '1' } } });
    await waitUntil('the quota to be computed', async () => {
      const q = await client.get<KubeObject & { status?: { used?: Record<string, string> } }>(QUOTAS, target, 'q');
      return q.status?.used?.configmaps === '1' ? true : undefined;
    });
    const r = await cli('restore', 'create', 'dry-quota', '--from-backup', 'src', '--dry-run', '--namespace-mappings', `${app}:${target}`, '--wait');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/Restore completed with status: Completed \(would create \d+, would update 0, would skip \d+, would fail 5\)/);
    const d = await cli('restore', 'describe', 'dry-quota');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^Phase:\s+Completed \(dry run\)$/m);
    expect(d.stdout).toMatch(/^Summary:\s+\d+ would be created, 0 would be updated, \d+ would be skipped, 5 would fail$/m);
    expect(d.stdout).toContain('  Would fail (5):\n');
    for (let i = 0; i < 5; i++) expect(d.stdout).toMatch(new RegExp(`^ {4}configmaps ${target}/cm-${i}: .*exceeded quota: q`, 'm'));
    expect(d.stdout).toMatch(new RegExp(`configmaps ${target}/cm-0: would fail: .*exceeded quota`));
    expect(d.stdout).not.toMatch(/^ {2}Failed \(/m);
    for (let i = 0; i < 5; i++) await expect(client.get(CORE.configMaps, target, `cm-${i}`)).rejects.toSatisfy(isNotFound);
  });

  it('restores into a mapped namespace with --wait, and the objects are there', async () => {
    const r = await cli('restore', 'create', '--from-backup', 'src', '--namespace-mappings', `${app}:${copy}`, '--wait');
    expect(r.code, show(r)).toBe(0);
    const name = /Restore request "(src-\d{14})"/.exec(r.stdout)?.[1] ?? '';
    expect(name).not.toBe('');
    expect(r.stdout).toMatch(/^Completed: (\d+)\/\1 items restored \(100%\)$/m);
    for (let i = 0; i < 5; i++) {
      const cm = await client.get<KubeObject & { data?: Record<string, string> }>(CORE.configMaps, copy, `cm-${i}`);
      expect(cm.data).toEqual({ i: String(i) });
    }
    await client.get(CORE.services, copy, 'web');

    const get = await cli('restore', 'get', name);
    expect(get.stdout).toMatch(new RegExp(`^${name}\\s+src\\s+Completed\\s+`, 'm'));
    const restored = JSON.parse((await cli('restore', 'get', name, '-o', 'json')).stdout) as Restore;
    expect(restored.status?.summary?.created).toBeGreaterThanOrEqual(6);
    const d = await cli('restore', 'describe', name);
    expect(d.stdout).toMatch(/^Items:\n {2}Created \(\d+\):$/m);
    expect(d.stdout).toContain('Warnings:  <none>');
    const logs = await cli('restore', 'logs', name);
    expect(logs.code, show(logs)).toBe(0);
    expect(logs.stdout).toMatch(/ info +restore completed/);
  });

  it('says plainly when a restore does not exist', async () => {
    const r = await cli('restore', 'logs', 'nope');
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`error: restore "nope" not found in namespace ${ns}`);
  });
});
