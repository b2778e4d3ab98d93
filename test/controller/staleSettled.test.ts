// A stale backup (found InProgress with no server running it) whose location read fails at once,
// not through an outage the store rides out: the credentials are refused (403). The sweep asks to
// be called again while the outage window lasts; informers never resync, so only that requeue can
// settle it. It ends Failed, saying the location could not be read for the window and why.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { CORE, ensureCrds, type DynamicClient } from '../../src/kube/index.js';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import { uniqueName } from '../support/kube.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

describe('a stale backup whose location read fails fast', () => {
  const ns = uniqueName('stale-fast');
  let client: DynamicClient;
  let s3: S3Server;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    client = testClient(inject('cluster').kubeconfigPath);
    s3 = await startS3Server({ buckets: ['vault'] });
  });

  afterAll(async () => {
    await server?.stop();
    await s3?.close();
    await client?.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    client?.close();
  });

  it('is settled Failed once the outage window has passed, naming the read error', async () => {
    await ensureCrds(client);
    await ensureNamespace(client, ns);
    // Keys the S3 server refuses: every read fails at once with InvalidAccessKeyId.
    await createS3CredentialsSecret(client, ns, 'wrong-keys', { accessKeyId: 'NOT-THE-KEY', secretAccessKey: 'NOT-THE-SECRET' });
    // Left InProgress by a server that is gone: created, and set InProgress, before this server starts.
    await client.create(RESOURCES.Backup, ns, newBackup('stale', ns, { storageLocation: 'default' }));
    await client.patchStatus(RESOURCES.Backup, ns, 'stale', { status: { phase: 'InProgress', startTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } });

    server = await startServer({
      kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, trustMode: 'cluster-admin',
      location: { name: 'default', spec: s3LocationSpec(s3, { bucket: 'vault', prefix: 'p', secret: 'wrong-keys' }) },
      // A short window: the run is retried (1 s, 2 s, ...) until the location has been unreadable for 3 s.
      args: ['--object-store-outage-timeout', '3s'],
    });
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'stale', 60_000);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toMatch(/^the Stowage server running this backup stopped before it finished/);
    expect(b.status?.failureReason).toMatch(/location default cannot be read to look for its stowage-backup\.json \(.*InvalidAccessKeyId|location default cannot be read to look for its stowage-backup\.json \(.*AWS Access Key Id/);
    expect(b.status?.failureReason).toContain('for 3s, so whether it completed could not be checked');
    expect(b.status?.completionTimestamp).toBeDefined();
    // It was retried before it was given up on.
    expect(server.output()).toMatch(/backup \S+\/stale was left InProgress by a server that stopped, and location default cannot be read .*; trying again in \d/);
    // Logged just after the status patch the wait above saw: waited for, not read at once.
    await server.waitForOutput(/backup \S+\/stale marked Failed: /, 30_000);
  }, 180_000);
});
