// A cancel cuts through an S3 outage: a backup whose multipart upload is under way loses its S3
// server (the server's outage window is 150 s), and is canceled with `stowage backup cancel
// --wait`. A watch sees it go from InProgress to Canceled (not Failed) while S3 is still down, and
// the CLI returns then. S3 comes back only after that: the canceled run's clean-up, kept in the
// spool, runs then: the plugin asks S3 to abort the multipart upload, the tarball's key is
// deleted (no tarball exists), and the results and the run log arrive in the bucket. A recording
// proxy in front of S3 shows what reached the store; while S3 is stopped the proxy answers 502, an
// outage the store rides out like a refused connection. (s3rver, the test's S3 server, does not
// implement AbortMultipartUpload, so the parts it stored stay on its disk: the request is the
// assertion.)
import crypto from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { RESOURCES, newBackup, type Backup, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import { CORE } from '../../src/kube/index.js';
import { startS3Server, storedParts } from '../../scripts/cluster/s3.js';
import { s3Operation, startRecordingProxy } from '../support/recordingProxy.js';
import { ensureBuilt, runCli, show } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer } from '../support/inProcessServer.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, testClient } from '../support/server.js';

/** Incompressible ConfigMaps, each in the tarball twice: ~20 MiB, so the tarball is a multipart upload. */
const CONFIGMAPS = 14;
const RAW_BYTES = 700 * 1024;
/** The server rides out outages this long; the cancel must not wait for it. */
const OUTAGE_WINDOW_MS = 150_000;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('cancel during an S3 outage', () => {
  it('ends Canceled while S3 is down; the partial upload is gone and the log arrives once it is back', async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    const c = testClient(kubeconfig);
    cleanups.push(async () => c.close());
    await ensureBuilt();
    const ns = uniqueName('cancel-outage');
    const s3 = await startS3Server({ buckets: ['vault'] });
    cleanups.push(() => s3.close());
    const proxy = await startRecordingProxy(s3.endpoint);
    cleanups.push(() => proxy.close());
    const TARBALL = '/vault/p/backups/big/big.tar.gz';
    await ensureNamespace(c, ns);
    cleanups.push(() => c.delete(CORE.namespaces, undefined, ns));
    await createS3CredentialsSecret(c, ns, 'cloud-credentials', s3);
    for (let i = 0; i < CONFIGMAPS; i += 4) {
      await Promise.all(Array.from({ length: Math.min(4, CONFIGMAPS - i) }, (_, j) =>
        c.create(CORE.configMaps, ns, { metadata: { name: `blob-${i + j}` }, data: { blob: crypto.randomBytes(RAW_BYTES).toString('base64') } })));
    }

    // Small pages at a low rate: the tarball's parts go up over several seconds.
    // In process: nothing here kills the server (the plugin, which rides out the outage, is its process).
    const server = await startInProcessServer({
      kubeconfigPath: kubeconfig, namespace: ns,
      args: ['--client-page-size', '2', '--client-qps', '2', '--client-burst', '1', '--object-store-outage-timeout', `${OUTAGE_WINDOW_MS / 1000}s`],
      location: { name: 'default', spec: s3LocationSpec({ ...s3, endpoint: proxy.endpoint }, { bucket: 'vault', prefix: 'p', secret: 'cloud-credentials', validationFrequency: '1s' }) },
    });
    cleanups.push(() => server.stop());
    await waitUntil('location Available', async () => {
      const l = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? l : undefined;
    }, 60_000, 100).catch((err: unknown) => {
      throw new Error(`${String(err)}\nserver output:\n${server.output().slice(-4000)}`);
    });

    await c.create(RESOURCES.Backup, ns, newBackup('big', ns, { includedNamespaces: [ns], includedResources: ['configmaps'] }));
    await waitUntil('a part of the tarball stored', async () => (storedParts(s3.directory, 'vault') >= 1 ? true : undefined), 120_000, 20);
    await s3.stop();
    let s3Down = true;

    // Watch from the current version: every phase the Backup goes through from here is seen.
    const { resourceVersion } = await c.listAll<Backup>(RESOURCES.Backup, { namespace: ns });
    const stopWatch = new AbortController();
    const phases: string[] = [];
    const seen = (async (): Promise<{ phase: string; s3Down: boolean; backup: Backup }> => {
      for await (const ev of c.watch<Backup>(RESOURCES.Backup, { namespace: ns, resourceVersion, signal: stopWatch.signal })) {
        if (ev.type === 'BOOKMARK' || ev.object.metadata.name !== 'big') continue;
        const phase = ev.object.status?.phase ?? 'New';
        if (phases.at(-1) !== phase) phases.push(phase);
        if (phase !== 'InProgress' && phase !== 'New') return { phase, s3Down, backup: ev.object };
      }
      throw new Error('the watch ended before the backup finished');
    })();
    const t0 = performance.now();
    const cancel = await runCli(['backup', 'cancel', 'big', '--wait'], { kubeconfig, namespace: ns, timeoutMs: OUTAGE_WINDOW_MS });
    const cliMs = performance.now() - t0;
    const ended = await seen;
    // On a quiet machine every part may reach S3 before it stops, and the Complete go out (and fail)
    // before the cancel lands; what must hold is that none goes out once the run is Canceled.
    const atCanceled = proxy.requests.length;
    stopWatch.abort();
    process.stderr.write(`[cancelOutage] Canceled during the outage; cancel --wait returned ${cliMs.toFixed(0)} ms after it started (outage window ${OUTAGE_WINDOW_MS / 1000} s)\n`);

    // Canceled, not Failed, and while S3 was still down: the outage window was not waited out.
    expect(ended.phase).toBe('Canceled');
    expect(phases).toEqual(['InProgress', 'Canceled'].slice(phases[0] === 'InProgress' ? 0 : 1));
    expect(ended.s3Down).toBe(true);
    expect(ended.backup.status?.failureReason).toMatch(/^canceled by \S+$/);
    expect(cancel.code, show(cancel)).toBe(0);
    expect(cancel.stdout).toMatch(/Backup "big" Canceled: canceled by \S+; \d+ items backed up; nothing of it is restorable\./);
    // The clean-up, the results and the log wait in the spool.
    expect(server.output()).toContain('the deletion is kept in the spool and done when storage is back');
    expect(server.output()).toMatch(/could not upload the run log to location default .*will upload it when the location is available/);
    expect(server.output()).not.toContain('longer than the 2m30s outage window');

    const beforeReturn = proxy.requests.length;
    await s3.start();
    s3Down = false;
    const s3c = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    cleanups.push(async () => s3c.destroy());
    const exists = async (key: string): Promise<boolean> => {
      try {
        await s3c.send(new HeadObjectCommand({ Bucket: 'vault', Key: key }));
        return true;
      } catch (err) {
        if ((err as { name?: string }).name === 'NotFound') return false;
        throw err;
      }
    };
    // The spool is flushed at the location's next validation; the plugin aborts the upload once S3 answers.
    let state = '';
    const sentSince = (op: string): boolean => proxy.requests.slice(beforeReturn).some((r) => r.path === TARBALL && s3Operation(r) === op);
    await waitUntil('the log and results uploaded, the upload aborted and the tarball deleted', async () => {
      const log = await exists('p/backups/big/big-logs.gz');
      const results = await exists('p/backups/big/big-results.gz');
      state = `log ${log}, results ${results}, AbortMultipartUpload ${sentSince('AbortMultipartUpload')}, DeleteObject ${sentSince('DeleteObject')}`;
      return log && results && sentSince('AbortMultipartUpload') && sentSince('DeleteObject') ? true : undefined;
    }, 120_000, 250).catch((err: unknown) => {
      throw new Error(`${String(err)} (${state})\nserver output:\n${server.output().slice(-6000)}`);
    });
    expect(await exists('p/backups/big/big.tar.gz')).toBe(false);
    // The abort names the upload that was under way, and nothing completed it (the tarball and the
    // marker are gone, asserted above and below; no Complete was sent once the run was Canceled).
    const created = proxy.requests.filter((r) => r.path === TARBALL && s3Operation(r) === 'CreateMultipartUpload').length;
    expect(created).toBe(1);
    const uploadIds = new Set(proxy.requests.filter((r) => r.path === TARBALL && s3Operation(r) === 'UploadPart').map((r) => r.query.get('uploadId')));
    const aborted = proxy.requests.slice(beforeReturn).filter((r) => r.path === TARBALL && s3Operation(r) === 'AbortMultipartUpload').map((r) => r.query.get('uploadId'));
    expect(aborted.length).toBeGreaterThan(0);
    expect(aborted.every((id) => uploadIds.has(id))).toBe(true);
    expect(proxy.requests.slice(atCanceled).some((r) => r.path === TARBALL && s3Operation(r) === 'CompleteMultipartUpload')).toBe(false);
    expect(await exists('p/backups/big/stowage-backup.json')).toBe(false);
    const log = await s3c.send(new GetObjectCommand({ Bucket: 'vault', Key: 'p/backups/big/big-logs.gz' }));
    const lines = gunzipSync(Buffer.from(await log.Body!.transformToByteArray())).toString('utf8');
    expect(lines).toContain('(spec.cancel): stopping the backup');
    expect(lines).toContain('could not be deleted now');
    expect(lines).toMatch(/backup canceled by \S+; done before it stopped: \d+ items backed up/);
    // Still Canceled.
    expect((await c.get<Backup>(RESOURCES.Backup, ns, 'big')).status?.phase).toBe('Canceled');
  }, 600_000);
});
