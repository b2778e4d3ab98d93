// The run lifecycle (controller/run/lifecycle.ts) end to end, against `stowage server` as a child
// process and a real apiserver: one set of counts everywhere, a full run-log disk that ends the run
// Failed (not InProgress) without stopping the server, and restores from a schedule whose name is
// over 63 characters, which record the backup they picked.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  RESOURCES, newBackup, newDownloadRequest, newRestore, newSchedule, type Backup, type BackupSpec, type DownloadRequest, type Restore, type RestoreSpec,
} from '../../src/apis/v1/index.js';
import { createLinkKey, sealContext } from '../../src/auth/index.js';
import { backupFromSchedule } from '../../src/schedule/plan.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { runCli } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureAppNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { fillUp, mountTmpfs, unmount } from '../support/tmpfs.js';

const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true };

interface Event { involvedObject: { name?: string; kind?: string }; reason?: string; message?: string }

describe('run lifecycle', () => {
  const ns = uniqueName('stowage-lc');
  const app = uniqueName('lc-app');
  const loc = filesystemLocation();
  const loc2 = filesystemLocation('second');
  let client: DynamicClient;
  let server: RunningServer;
  let kubeconfig: string;
  let mounted: string | undefined;

  beforeAll(async () => {
    kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureAppNamespace(client, app, 8);
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc });
    await client.create(RESOURCES.BackupStorageLocation, ns, {
      apiVersion: 'stowage.dev/v1', kind: 'BackupStorageLocation', metadata: { name: loc2.name, namespace: ns }, spec: { ...loc2.spec, default: false },
    });
  });

  afterAll(async () => {
    if (mounted !== undefined) unmount(mounted);
    await server?.stop();
    client?.close();
    for (const root of [loc.root, loc2.root]) fs.rmSync(root, { recursive: true, force: true });
  });

  async function run<T extends Backup | Restore>(kind: 'Backup' | 'Restore', name: string, spec: BackupSpec | RestoreSpec): Promise<T> {
    if (kind === 'Backup') await client.create(RESOURCES.Backup, ns, newBackup(name, ns, spec as BackupSpec));
    else await client.create(RESOURCES.Restore, ns, newRestore(name, ns, spec as RestoreSpec));
    return waitFinished<T>(client, kind === 'Backup' ? RESOURCES.Backup : RESOURCES.Restore, ns, name, 90_000);
  }

  async function eventOf(name: string, reason: string): Promise<Event> {
    return waitUntil(`${reason} event of ${name}`, async () => {
      const list = await client.list<Event>(EVENTS, { namespace: ns });
      return list.items.find((e) => e.involvedObject.name === name && e.reason === reason);
    }, 20_000);
  }

  async function metric(name: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  }

  const stored = (root: string, ...parts: string[]): string => path.join(root, 'backups', ...parts);
  const inProgress = async (): Promise<string[]> => {
    const all = [...(await client.list<Backup>(RESOURCES.Backup, { namespace: ns })).items, ...(await client.list<Restore>(RESOURCES.Restore, { namespace: ns })).items];
    return all.filter((o) => o.status?.phase === 'InProgress').map((o) => `${o.kind}/${o.metadata.name}`);
  };

  it('reports one set of warning and error counts: status, event, end line of the log, results file and metric agree', async () => {
    const before = await metric('stowage_backup_success_total');
    // Two warnings: a namespace that does not exist and a resource the cluster does not serve.
    const b = await run<Backup>('Backup', 'counted', { includedNamespaces: [app, uniqueName('absent')], includedResources: ['configmaps', 'nosuchthings'] });
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(b.status?.warnings).toBe(2);
    expect(b.status?.errors).toBe(0);
    const items = b.status?.progress?.itemsBackedUp ?? 0;
    expect(items).toBeGreaterThanOrEqual(8);
    const results = JSON.parse(zlib.gunzipSync(fs.readFileSync(stored(loc.root, 'backups', 'counted', 'counted-results.gz'))).toString()) as
      { warnings: { cluster: string[]; namespaces: Record<string, string[]> } };
    expect(results.warnings.cluster.length + Object.values(results.warnings.namespaces).flat().length).toBe(2);
    const log = zlib.gunzipSync(fs.readFileSync(stored(loc.root, 'backups', 'counted', 'counted-logs.gz'))).toString();
    const ends = log.split('\n').filter((l) => /backup (completed|partially failed|failed)/.test(l));
    expect(ends, log).toHaveLength(1);
    expect(ends[0]).toContain(`backup completed: ${items} items backed up, 2 warnings, 0 errors`);
    expect((await eventOf('counted', 'Completed')).message).toBe(`${items} items backed up; 2 warnings, 0 errors`);
    expect(server.output()).toContain(`backup ${ns}/counted Completed: ${items} items backed up; 2 warnings, 0 errors`);
    expect(await metric('stowage_backup_success_total')).toBe(before + 1);
    const marker = JSON.parse(fs.readFileSync(stored(loc.root, 'backups', 'counted', 'stowage-backup.json'), 'utf8')) as Backup;
    expect(marker.status).toMatchObject({ phase: 'Completed', warnings: 2, errors: 0 });
    expect(marker.status).not.toHaveProperty('failureReason');
  });

  it('ends a run Failed, with the reason, when the run-log disk is full; nothing stays InProgress and the next runs complete', async () => {
    const good = await run<Backup>('Backup', 'before-full', { includedNamespaces: [app] });
    expect(good.status?.phase).toBe('Completed');
    // A 64 KiB tmpfs over the run-log directory, filled up: every write to a run log gets ENOSPC.
    mounted = path.join(server.scratchDir, 'run-logs');
    mountTmpfs(mounted, '64k');
    const filler = path.join(mounted, 'filler');
    fillUp(filler);

    const t0 = Date.now();
    const b = await run<Backup>('Backup', 'disk-full', { includedNamespaces: [app] });
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toMatch(/^the run log could not be written: .*ENOSPC/);
    // Failed before the marker: the bucket holds no backup that sync would bring back.
    expect(fs.existsSync(stored(loc.root, 'backups', 'disk-full', 'stowage-backup.json'))).toBe(false);
    expect((await eventOf('disk-full', 'Failed')).message).toBe(b.status?.failureReason);

    const r = await run<Restore>('Restore', 'disk-full-restore', { backupName: 'before-full', includedNamespaces: [app] });
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toMatch(/^the run log could not be written: .*ENOSPC/);
    expect(await inProgress()).toEqual([]);

    fs.rmSync(filler);
    const after = await run<Backup>('Backup', 'after-full', { includedNamespaces: [app] });
    expect(after.status?.phase, JSON.stringify(after.status)).toBe('Completed');
    const restored = await run<Restore>('Restore', 'after-full-restore', { backupName: 'after-full', includedNamespaces: [app] });
    expect(restored.status?.phase, JSON.stringify(restored.status)).toBe('Completed');
    expect(await inProgress()).toEqual([]);
    expect(server.proc.exitCode).toBeNull();
  });

  it('restores the newest Completed backup of a 70-character schedule, records it in spec.backupName, and DownloadRequests resolve the same one', async () => {
    const schedule = `nightly-${'x'.repeat(57)}-long`;
    expect(schedule).toHaveLength(70);
    const sched = newSchedule(schedule, ns, { schedule: '@daily', template: { includedNamespaces: [app] } });
    // As the schedule controller makes them (the label value is shortened to 63 characters).
    const older = backupFromSchedule(sched, 'sched-older');
    older.spec.storageLocation = loc.name;
    const newer = backupFromSchedule(sched, 'sched-newer');
    newer.spec.storageLocation = loc2.name;
    await client.create(RESOURCES.Backup, ns, older);
    const olderDone = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'sched-older');
    expect(olderDone.status?.phase).toBe('Completed');
    // Start times are stamped to the second: the newer one starts in a later second.
    const olderStart = Date.parse(olderDone.status?.startTimestamp ?? '');
    await waitUntil('the next second', () => Promise.resolve(Date.now() >= olderStart + 1000 ? true : undefined), 5_000, 50);
    await client.create(RESOURCES.Backup, ns, newer);
    expect((await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'sched-newer')).status?.phase).toBe('Completed');

    const r = await run<Restore>('Restore', 'from-schedule', { scheduleName: schedule, includedNamespaces: [app] });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(r.spec.backupName).toBe('sched-newer');
    expect(r.spec.scheduleName).toBe(schedule);
    // Its artifacts went where its backup lives.
    expect(fs.existsSync(path.join(loc2.root, 'backups', 'restores', 'from-schedule', 'restore-from-schedule-results.gz'))).toBe(true);

    const described = await runCli(['restore', 'describe', 'from-schedule'], { kubeconfig, namespace: ns, timeoutMs: 60_000 });
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(new RegExp(`Schedule: +${schedule}`));
    expect(described.stdout).toMatch(/Backup: +sched-newer/);

    // Not started (it fails validation): a download of its artifacts resolves the backup by the same rule.
    const unstarted = await run<Restore>('Restore', 'from-schedule-invalid', { scheduleName: schedule, includedNamespaces: [app], namespaceMapping: { [app]: 'Not_A_Namespace' } });
    expect(unstarted.status?.phase).toBe('FailedValidation');
    expect(unstarted.spec.backupName).toBeUndefined();
    for (const target of ['from-schedule', 'from-schedule-invalid']) {
      const req = newDownloadRequest(ns, { kind: 'RestoreResults', name: target });
      const linkKey = createLinkKey();
      req.spec.publicKey = linkKey.publicKey;
      const created = await client.create<DownloadRequest>(RESOURCES.DownloadRequest, ns, req);
      const dr = await waitUntil(`download request for ${target}`, async () => {
        const d = await client.get<DownloadRequest>(RESOURCES.DownloadRequest, ns, created.metadata.name);
        return d.status?.phase === 'Processed' ? d : undefined;
      }, 30_000);
      expect(dr.status?.message).toBeUndefined();
      const url = dr.status?.sealedURL !== undefined ? linkKey.open(dr.status.sealedURL, sealContext(created)) : { error: 'no sealedURL' };
      expect(typeof url === 'string' ? locationOfURL(url) : url).toBe(loc2.root);
    }
  });

  /** The filesystem root a download URL points into: a file:// URL of the store, or the location named in a /download/ token. */
  function locationOfURL(url: string): string {
    if (url.startsWith('file://')) return [loc.root, loc2.root].find((root) => new URL(url).pathname.startsWith(`${root}/`)) ?? url;
    const token = new URL(url).pathname.split('/download/')[1] ?? '';
    const body = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()) as { loc?: string };
    return body.loc === loc2.name ? loc2.root : body.loc === loc.name ? loc.root : url;
  }
});
