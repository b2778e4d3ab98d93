// DownloadRequests and DeleteBackupRequests act with their requester's rights (issue 19, parts 2
// and 4), against `stowage server` as a child process, the real API server and its RBAC: alice
// (edit in her team's namespace through group team-a) may use her team's backup and its log, but
// neither download nor delete team-b's; admin may do both. Links are sealed to the requester's
// one-time key (no plain URL in any status), expire, and fetch only the object they were made for.
//
// Requests are created by admin with the requester stamp preset (admin may impersonate, so this is
// what the admission webhook would also allow); the CLI runs against a cluster-admin-mode server,
// whose requests need no stamp.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  RESOURCES, newBackup, newDeleteBackupRequest, newDownloadRequest, newRestore,
  type Backup, type BackupSpec, type DeleteBackupRequest, type DownloadRequest, type DownloadTarget, type Restore,
} from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, createLinkKey, formatRequester, sealContext, type Requester } from '../../src/auth/index.js';
import { NO_PUBLIC_KEY } from '../../src/controller/downloadRequest.js';
import { isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { ensureBuilt, runCli, show } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const NAMESPACES = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };
const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const SECRETS = { group: '', version: 'v1', resource: 'secrets', namespaced: true };
const ROLEBINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true };

const ALICE: Requester = { username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] };
// As the API server authenticates the test control plane's admin token.
const ADMIN: Requester = { username: 'admin', uid: 'admin', groups: ['system:masters', 'system:authenticated'] };

const EXPIRED = 'the download link has expired; run the command again';
const ALTERED = 'invalid download token (it was issued by another server process, or altered)';

function stamped<T extends { metadata: { annotations?: Record<string, string> } }>(obj: T, who: Requester): T {
  obj.metadata.annotations = { ...obj.metadata.annotations, [REQUESTER_ANNOTATION]: formatRequester(who) };
  return obj;
}

describe('download and delete rights', () => {
  const ns = uniqueName('stowage-dlr');
  const adminNs = uniqueName('stowage-dlr-ca');
  const teamA = uniqueName('team-a');
  const teamB = uniqueName('team-b');
  const loc = filesystemLocation();
  const adminLoc = filesystemLocation();
  let client: DynamicClient;
  let kubeconfig: string;
  let server: RunningServer;
  let adminServer: RunningServer;
  /** Every DownloadRequest status this file saw, for the no-plain-URL check. */
  const statuses: unknown[] = [];

  async function backup(namespace: string, name: string, spec: BackupSpec): Promise<Backup> {
    await client.create(RESOURCES.Backup, namespace, stamped(newBackup(name, namespace, spec), ADMIN));
    const done = await waitFinished<Backup>(client, RESOURCES.Backup, namespace, name);
    expect(done.status?.phase, JSON.stringify(done.status)).toBe('Completed');
    return done;
  }

  /** Creates a DownloadRequest (as admin, stamped for `who`), waits for the answer, opens the link. */
  async function requestLink(namespace: string, target: DownloadTarget, who: Requester | undefined, withKey = true): Promise<{ url?: string; message?: string; dr: DownloadRequest }> {
    const req = newDownloadRequest(namespace, target);
    const key = createLinkKey();
    if (withKey) req.spec.publicKey = key.publicKey;
    const created = await client.create<DownloadRequest>(RESOURCES.DownloadRequest, namespace, who === undefined ? req : stamped(req, who));
    const dr = await waitUntil(`DownloadRequest ${created.metadata.name} processed`, async () => {
      const d = await client.get<DownloadRequest>(RESOURCES.DownloadRequest, namespace, created.metadata.name);
      return d.status?.phase === 'Processed' ? d : undefined;
    }, 30_000);
    statuses.push(dr.status);
    if (dr.status?.sealedURL === undefined) return { ...(dr.status?.message !== undefined ? { message: dr.status.message } : {}), dr };
    const url = key.open(dr.status.sealedURL, sealContext(created));
    if (typeof url !== 'string') throw new Error(url.error);
    return { url, dr };
  }

  async function fetchBytes(url: string): Promise<{ status: number; body: Buffer }> {
    const res = await fetch(url);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  }

  async function deleteAs(namespace: string, backupName: string, who: Requester): Promise<DeleteBackupRequest> {
    const created = await client.create<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, namespace, stamped(newDeleteBackupRequest(backupName, namespace), who));
    return waitUntil(`DeleteBackupRequest ${created.metadata.name} processed`, async () => {
      const d = await client.get<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, namespace, created.metadata.name);
      return d.status?.phase === 'Processed' ? d : undefined;
    }, 60_000);
  }

  async function exists(namespace: string, name: string): Promise<boolean> {
    try {
      await client.get(RESOURCES.Backup, namespace, name);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  beforeAll(async () => {
    await ensureBuilt();
    kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    for (const n of [teamA, teamB]) await ensureNamespace(client, n);
    await client.create(CONFIGMAPS, teamA, { metadata: { name: 'settings' }, data: { colour: 'blue' } });
    await client.create(SECRETS, teamB, { metadata: { name: 'db' }, stringData: { password: 'hunter2' } });
    await client.create(ROLEBINDINGS, teamA, {
      metadata: { name: 'team-a-edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'team-a' }],
    });
    [server, adminServer] = await Promise.all([
      startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc }),
      startServer({ kubeconfigPath: kubeconfig, namespace: adminNs, location: adminLoc, args: ['--trust-mode', 'cluster-admin', '--download-url-ttl', '8s'] }),
    ]);
    // Team a's own backup leaves out the RoleBinding that gives alice her rights (and the ClusterRole
    // it pulls in): edit may not read RBAC objects, so alice could neither have backed them up nor
    // restore them. Team b's holds its Secrets.
    await Promise.all([
      backup(ns, 'a1', { includedNamespaces: [teamA], excludedResources: ['rolebindings.rbac.authorization.k8s.io'] }),
      backup(ns, 'b1', { includedNamespaces: [teamB], includedResources: ['secrets'] }),
      backup(adminNs, 'c1', { includedNamespaces: [teamA] }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([server?.stop(), adminServer?.stop()]);
    for (const n of [teamA, teamB, ns, adminNs]) await client?.delete(NAMESPACES, undefined, n).catch(() => undefined);
    client?.close();
    for (const root of [loc.root, adminLoc.root]) fs.rmSync(root, { recursive: true, force: true });
  });

  it("lets alice download her team's backup and its log", async () => {
    const tarball = await requestLink(ns, { kind: 'BackupContents', name: 'a1' }, ALICE);
    expect(tarball.message).toBeUndefined();
    const got = await fetchBytes(tarball.url ?? '');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(fs.readFileSync(path.join(loc.root, 'backups', 'backups', 'a1', 'a1.tar.gz')));

    const log = await requestLink(ns, { kind: 'BackupLog', name: 'a1' }, ALICE);
    const text = zlib.gunzipSync((await fetchBytes(log.url ?? '')).body).toString('utf8');
    expect(text).toContain(`starting backup ${ns}/a1`);
    // The link is short-lived: five minutes by default.
    const ttl = Date.parse(log.dr.status?.expiration ?? '') - Date.parse(log.dr.metadata.creationTimestamp ?? '');
    expect(ttl).toBeGreaterThan(290_000);
    expect(ttl).toBeLessThanOrEqual(302_000);
  });

  it("refuses alice team-b's backup, its log, and a restore's log from it, naming what she lacks; admin may", async () => {
    const lacks = `secrets in namespace ${teamB}, which alice may neither list nor create`;
    expect((await requestLink(ns, { kind: 'BackupContents', name: 'b1' }, ALICE)).message).toBe(`alice may not download backup "b1": it holds ${lacks}`);
    expect((await requestLink(ns, { kind: 'BackupLog', name: 'b1' }, ALICE)).message).toBe(`alice may not download the log of backup "b1": it holds ${lacks}`);

    await client.create(RESOURCES.Restore, ns, stamped(newRestore('rb1', ns, { backupName: 'b1', dryRun: true }), ADMIN));
    const restored = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'rb1');
    expect(restored.status?.phase, JSON.stringify(restored.status)).toBe('Completed');
    expect((await requestLink(ns, { kind: 'RestoreLog', name: 'rb1' }, ALICE)).message).toBe(`alice may not download the log of restore "rb1": its backup "b1" holds ${lacks}`);

    const asAdmin = await requestLink(ns, { kind: 'BackupContents', name: 'b1' }, ADMIN);
    expect(asAdmin.message).toBeUndefined();
    expect((await fetchBytes(asAdmin.url ?? '')).status).toBe(200);
    const restoreLog = await requestLink(ns, { kind: 'RestoreLog', name: 'rb1' }, ADMIN);
    expect((await fetchBytes(restoreLog.url ?? '')).status).toBe(200);
  });

  it('lets only its requester use a backup that stored no resource list to check rights against', async () => {
    await client.create(RESOURCES.Backup, ns, stamped(newBackup('v1', ns, { includedNamespaces: [teamA], storageLocation: 'no-such-location' }), ADMIN));
    const failed = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'v1');
    expect(failed.status?.phase).toBe('FailedValidation');
    expect((await requestLink(ns, { kind: 'BackupLog', name: 'v1' }, ALICE)).message).toBe(
      'alice may not download the log of backup "v1": backup "v1" has no resource list in its location yet (it is still running, or failed before writing one), ' +
        "so there is nothing to check alice's rights against, and only its requester, admin (groups: system:masters), may",
    );
    // Its requester gets past the rights check, to the real reason there is nothing to download.
    expect((await requestLink(ns, { kind: 'BackupLog', name: 'v1' }, ADMIN)).message).toBe('backup storage location "no-such-location" does not exist');
  });

  it('refuses a request without a public key with the fix', async () => {
    expect((await requestLink(ns, { kind: 'BackupContents', name: 'a1' }, ALICE, false)).message).toBe(NO_PUBLIC_KEY);
    expect(NO_PUBLIC_KEY).toContain('use stowage backup download/logs, or set spec.publicKey');
  });

  it("refuses a link for one object (the log) when it is made to name another (the tarball)", async () => {
    const log = await requestLink(ns, { kind: 'BackupLog', name: 'a1' }, ALICE);
    const url = new URL(log.url ?? '');
    const [body, sig] = url.pathname.slice('/download/'.length).split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(claims).toMatchObject({ kind: 'BackupLog', name: 'a1', loc: 'default', bucket: 'backups', key: 'backups/a1/a1-logs.gz' });
    for (const forged of [{ kind: 'BackupContents', key: 'backups/a1/a1.tar.gz' }, { key: 'backups/b1/b1-logs.gz', name: 'b1' }, { key: 'backups/a1/a1.tar.gz' }]) {
      const other = new URL(url);
      other.pathname = `/download/${Buffer.from(JSON.stringify({ ...claims, ...forged })).toString('base64url')}.${sig}`;
      const res = await fetchBytes(other.toString());
      expect(res.status).toBe(403);
      expect(res.body.toString('utf8').trim()).toBe(ALTERED);
    }
    // The genuine link still works.
    expect((await fetchBytes(url.toString())).status).toBe(200);
  });

  it("refuses alice deleting team-b's backup and keeps it; admin may delete it", async () => {
    const refused = await deleteAs(ns, 'b1', ALICE);
    expect(refused.status?.errors).toEqual([
      `alice may not delete backup "b1": it holds secrets in namespace ${teamB}, which alice may neither list nor create`,
    ]);
    expect(await exists(ns, 'b1')).toBe(true);
    expect((await client.get<Backup>(RESOURCES.Backup, ns, 'b1')).status?.phase).toBe('Completed');
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'b1', 'b1.tar.gz'))).toBe(true);

    const done = await deleteAs(ns, 'b1', ADMIN);
    expect(done.status?.errors ?? []).toEqual([]);
    expect(await exists(ns, 'b1')).toBe(false);
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'b1'))).toBe(false);
  });

  it('downloads end to end with the CLI (cluster-admin mode), which seals and opens the link itself', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-dlr-'));
    try {
      const file = path.join(tmp, 'c1.tar.gz');
      const r = await runCli(['backup', 'download', 'c1', '-o', file], { kubeconfig, namespace: adminNs, timeoutMs: 60_000 });
      expect(r.code, show(r)).toBe(0);
      expect(fs.readFileSync(file)).toEqual(fs.readFileSync(path.join(adminLoc.root, 'backups', 'backups', 'c1', 'c1.tar.gz')));
      const logs = await runCli(['backup', 'logs', 'c1'], { kubeconfig, namespace: adminNs, timeoutMs: 60_000 });
      expect(logs.code, show(logs)).toBe(0);
      expect(logs.stdout).toContain(`starting backup ${adminNs}/c1`);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('refuses a link once it has expired (410), with the exact message', async () => {
    const link = await requestLink(adminNs, { kind: 'BackupContents', name: 'c1' }, undefined);
    expect((await fetchBytes(link.url ?? '')).status).toBe(200);
    const exp = Date.parse(link.dr.status?.expiration ?? '');
    expect(exp - Date.parse(link.dr.metadata.creationTimestamp ?? '')).toBeLessThanOrEqual(10_000);
    await waitUntil('the link to expire', () => Promise.resolve(Date.now() > exp + 200 ? true : undefined), 15_000, 100);
    const res = await fetchBytes(link.url ?? '');
    expect(res.status).toBe(410);
    expect(res.body.toString('utf8').trim()).toBe(EXPIRED);
  });

  it('refuses a link (410) once its location points at another bucket, where the same key may be something else', async () => {
    const link = await requestLink(ns, { kind: 'BackupLog', name: 'a1' }, ADMIN);
    expect((await fetchBytes(link.url ?? '')).status).toBe(200);
    await client.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { objectStorage: { bucket: 'elsewhere' } } }, 'merge');
    const res = await waitUntil('the server to see the moved location', async () => {
      const r = await fetchBytes(link.url ?? '');
      return r.status === 200 ? undefined : r;
    }, 30_000);
    expect(res.status).toBe(410);
    expect(res.body.toString('utf8').trim()).toBe('backup storage location "default" has moved to another bucket or prefix since this link was made; run the command again');
  });

  it('never writes a plain URL into a DownloadRequest status', () => {
    expect(statuses.length).toBeGreaterThanOrEqual(10);
    for (const s of statuses) expect(JSON.stringify(s)).not.toMatch(/http/i);
    expect(statuses.filter((s) => (s as { sealedURL?: unknown }).sealedURL !== undefined).length).toBeGreaterThanOrEqual(5);
  });
});
