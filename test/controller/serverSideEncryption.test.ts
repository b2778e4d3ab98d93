// Server-side encryption of stowage.dev/aws locations through a running server: real backups,
// downloads and a restore through the CLI, with a recording proxy in front of the S3 server so
// the headers that reach it are checked. An SSE-C location (over https, as S3 requires) sends the
// key with every write and read, and its downloads are served by the server, never by a signed
// URL; an SSE-KMS location asks for the key id on writes, and its downloads use signed URLs that
// carry no encryption parameters. A contradictory config makes its location Unavailable with the
// reason. The locations are created with `stowage backup-location create` (the SSE-C one with
// --cacert, to trust the proxy's certificate).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { RESOURCES, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName } from '../support/kube.js';
import { s3Operation, startRecordingProxy, type RecordedRequest, type RecordingProxy } from '../support/recordingProxy.js';
import { createS3CredentialsSecret, ensureAppNamespace, ensureNamespace, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type RunOptions } from '../cli/helpers.js';

const C_ALG = 'x-amz-server-side-encryption-customer-algorithm';
const C_KEY = 'x-amz-server-side-encryption-customer-key';
const C_MD5 = 'x-amz-server-side-encryption-customer-key-md5';
const SSE = 'x-amz-server-side-encryption';
const KMS_KEY = 'x-amz-server-side-encryption-aws-kms-key-id';
const WRITES = ['PutObject', 'CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload'];
const READS = ['GetObject', 'HeadObject'];

function sseHeaders(r: RecordedRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) if (k.startsWith(SSE) && typeof v === 'string') out[k] = v;
  return out;
}

describe('server-side encryption of S3 locations, through the server', () => {
  // s3rver, not the shared MinIO: these tests check what is asked for on the wire, with made-up KMS
  // key ids and SSE-C through a TLS proxy in front of plain HTTP. MinIO enforces SSE (it refuses
  // SSE-S3/KMS without a configured KMS, and SSE-C over plain HTTP); s3rver stores the bytes as sent.
  let s3: S3Server;
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('sse');
  const app = uniqueName('sse-app');
  const restored = uniqueName('sse-restored');
  const bucket = `sse-${crypto.randomBytes(3).toString('hex')}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-sse-'));
  const customerKey = crypto.randomBytes(32);
  const keyFile = path.join(tmp, 'customer-key');
  let client: DynamicClient;
  let server: RunningServer;
  let ssecProxy: RecordingProxy;
  let kmsProxy: RecordingProxy;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);

  /** The requests on this test's bucket, by S3 operation. */
  const onBucket = (p: RecordingProxy): RecordedRequest[] => p.requests.filter((r) => r.path.startsWith(`/${bucket}/`));

  beforeAll(async () => {
    s3 = await startS3Server();
    client = testClient(kubeconfig);
    fs.writeFileSync(keyFile, customerKey, { mode: 0o600 });
    const direct = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    await direct.send(new CreateBucketCommand({ Bucket: bucket }));
    direct.destroy();
    ssecProxy = await startRecordingProxy(s3.endpoint, { tls: true });
    kmsProxy = await startRecordingProxy(s3.endpoint);
    await ensureBuilt();
    await ensureNamespace(client, ns);
    await ensureAppNamespace(client, app, 5);
    await createS3CredentialsSecret(client, ns, 'cloud-credentials', s3);
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns });
    opts = { kubeconfig, namespace: ns };
    const caFile = path.join(tmp, 'proxy-ca.pem');
    fs.writeFileSync(caFile, ssecProxy.caCert ?? '');
    const common = (endpoint: string): string[] => ['--provider', 'stowage.dev/aws', '--bucket', bucket, '--credential', 'cloud-credentials=cloud', '--config', `region=${s3.region},s3Url=${endpoint},s3ForcePathStyle=true`];
    const ssec = await cli('backup-location', 'create', 'ssec', ...common(ssecProxy.endpoint), '--prefix', 'ssec', '--config', `customerKeyEncryptionFile=${keyFile}`, '--cacert', caFile, '--default', '--wait');
    expect(ssec.code, show(ssec)).toBe(0);
    const kms = await cli('backup-location', 'create', 'kms', ...common(kmsProxy.endpoint), '--prefix', 'kms', '--config', 'serverSideEncryption=aws:kms,kmsKeyId=alias/backups', '--wait');
    expect(kms.code, show(kms)).toBe(0);
  });

  afterAll(async () => {
    await server?.stop();
    await ssecProxy?.close();
    await kmsProxy?.close();
    await client?.delete(CORE.namespaces, undefined, app).catch(() => undefined);
    await client?.delete(CORE.namespaces, undefined, restored).catch(() => undefined);
    client?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
    await s3?.close();
  });

  it('SSE-C: a backup, its download, logs and a restore all send the key; downloads go through the server, not a signed URL', async () => {
    const b = await cli('backup', 'create', 'ssec-1', '--include-namespaces', app, '--wait');
    expect(b.code, show(b)).toBe(0);
    const file = path.join(tmp, 'ssec-1.tar.gz');
    const dl = await cli('backup', 'download', 'ssec-1', '-o', file);
    expect(dl.code, show(dl)).toBe(0);
    expect(gunzipSync(fs.readFileSync(file)).toString('latin1')).toContain(`resources/configmaps/namespaces/${app}/cm-3.json`);
    const logs = await cli('backup', 'logs', 'ssec-1');
    expect(logs.code, show(logs)).toBe(0);
    expect(logs.stdout).toMatch(new RegExp(`^\\S+ info +starting backup ${ns}/ssec-1`, 'm'));
    expect(logs.stdout).toMatch(/ info +backup completed: \d+ items/);
    const describe = await cli('backup', 'describe', 'ssec-1', '--details');
    expect(describe.code, show(describe)).toBe(0);
    expect(describe.stdout).toContain(`    - ${app}/cm-3\n`);
    const r = await cli('restore', 'create', 'ssec-r', '--from-backup', 'ssec-1', '--namespace-mappings', `${app}:${restored}`, '--wait');
    expect(r.code, show(r)).toBe(0);
    const cm = await client.get<{ data?: Record<string, string> }>(CORE.configMaps, restored, 'cm-3');
    expect(cm.data).toEqual({ i: '3' });

    const want = { [C_ALG]: 'AES256', [C_KEY]: customerKey.toString('base64'), [C_MD5]: crypto.createHash('md5').update(customerKey).digest('base64') };
    const requests = onBucket(ssecProxy);
    const ops = new Set(requests.map(s3Operation));
    // Every artifact written and the tarball read for the restore. HEADs (backup sync's marker checks)
    // depend on when sync runs; test/plugin/awsServerSideEncryption.test.ts proves they carry the key.
    for (const op of ['PutObject', 'GetObject']) expect(ops, op).toContain(op);
    for (const req of requests.filter((x) => [...WRITES, ...READS].includes(s3Operation(x)))) {
      expect(sseHeaders(req), `${s3Operation(req)} ${req.path}`).toEqual(want);
    }
    expect(requests.filter((x) => s3Operation(x) === 'PutObject').map((x) => x.path)).toEqual(expect.arrayContaining([
      `/${bucket}/ssec/backups/ssec-1/ssec-1.tar.gz`,
      `/${bucket}/ssec/backups/ssec-1/ssec-1-logs.gz`,
      `/${bucket}/ssec/backups/ssec-1/stowage-backup.json`,
      `/${bucket}/ssec/restores/ssec-r/restore-ssec-r-logs.gz`,
    ]));
    // No presigned request reached the store: the CLI fetched from the server's endpoint.
    expect(requests.filter((x) => x.query.has('X-Amz-Signature'))).toEqual([]);
  });

  it('SSE-KMS: writes ask for aws:kms with the key id; reads carry nothing, and downloads use plain signed GET URLs', async () => {
    const b = await cli('backup', 'create', 'kms-1', '--include-namespaces', app, '--storage-location', 'kms', '--wait');
    expect(b.code, show(b)).toBe(0);
    const file = path.join(tmp, 'kms-1.tar.gz');
    const dl = await cli('backup', 'download', 'kms-1', '-o', file);
    expect(dl.code, show(dl)).toBe(0);
    expect(gunzipSync(fs.readFileSync(file)).toString('latin1')).toContain(`resources/configmaps/namespaces/${app}/cm-3.json`);

    const requests = onBucket(kmsProxy).filter((r) => r.path.includes('/kms/'));
    const puts = requests.filter((r) => WRITES.includes(s3Operation(r)) && s3Operation(r) !== 'UploadPart' && s3Operation(r) !== 'CompleteMultipartUpload');
    expect(puts.length).toBeGreaterThanOrEqual(4);
    for (const req of puts) expect(sseHeaders(req), req.path).toEqual({ [SSE]: 'aws:kms', [KMS_KEY]: 'alias/backups' });
    for (const req of requests.filter((r) => READS.includes(s3Operation(r)))) expect(sseHeaders(req), `${s3Operation(req)} ${req.path}`).toEqual({});
    const signed = requests.filter((r) => r.query.has('X-Amz-Signature'));
    expect(signed.map((r) => r.path)).toEqual([`/${bucket}/kms/backups/kms-1/kms-1.tar.gz`]);
    expect(signed[0]?.query.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(signed[0]?.query.get('X-Amz-SignedHeaders')).toBe('host');
  });

  it('a location with contradictory encryption keys is Unavailable with the reason', async () => {
    const r = await cli('backup-location', 'create', 'contradictory', '--provider', 'stowage.dev/aws', '--bucket', bucket, '--prefix', 'bad',
      '--config', `region=${s3.region},s3Url=${kmsProxy.endpoint},s3ForcePathStyle=true,serverSideEncryption=AES256,kmsKeyId=alias/backups`, '--wait');
    expect(r.code, show(r)).toBe(1);
    const reason = 'aws object store: kmsKeyId needs serverSideEncryption aws:kms (or no serverSideEncryption, which then means aws:kms), not AES256';
    expect(r.stderr).toContain(`error: backup storage location "contradictory" is Unavailable: `);
    expect(r.stderr).toContain(reason);
    const bad = await client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'contradictory');
    expect(bad.status?.phase).toBe('Unavailable');
    expect(bad.status?.message).toContain(reason);
    const g = await cli('backup-location', 'get', 'contradictory');
    expect(g.code, show(g)).toBe(0);
    expect(g.stdout).toMatch(new RegExp(`^contradictory +stowage\\.dev/aws +${bucket}/bad +Unavailable `, 'm'));
  });

  it('never writes the customer key to the server log', () => {
    expect(server.output()).not.toContain(customerKey.toString('base64'));
    expect(server.output()).not.toContain(customerKey.toString('hex'));
  });
});
