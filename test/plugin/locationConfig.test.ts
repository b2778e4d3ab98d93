// Every object-store provider is set up the same way: a third-party plugin process receives the
// location's credential file (a private copy of the Secret's key) and CA certificate through Init,
// over gRPC, exactly as the built-in S3 store does; Velero's provider names reach the built-in.
// The credential's contents never reach a log.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { newBackupStorageLocation, type BackupStorageLocation, type BackupStorageLocationSpec } from '../../src/apis/v1/index.js';
import type { StoreContext } from '../../src/controller/run/context.js';
import { openObjectStore } from '../../src/storage/open.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { PROVIDER_ALIASES } from '../../src/plugin/builtin/providers.js';
import { createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, testClient } from '../support/server.js';
import { memoryLogger, pluginDir, removeTempDirs, requireBuilt, selfCommand, tempDir } from './support.js';

const SECRETS = { group: '', version: 'v1', resource: 'secrets', namespaced: true };
const PEM = '-----BEGIN CERTIFICATE-----\nMIIBprobeCAcertificate\n-----END CERTIFICATE-----\n';

async function readAll(body: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of body) out.push(Buffer.from(c));
  return Buffer.concat(out).toString('utf8');
}

describe('object-store setup is the same for every provider', () => {
  let client: DynamicClient;
  let pool: PluginPool;
  let ns: string;
  let ctx: StoreContext;
  const logs = memoryLogger();
  const runLogs = memoryLogger();
  const secretText = `[default]\naws_access_key_id=${inject('s3').accessKeyId}\naws_secret_access_key=${inject('s3').secretAccessKey}\n# probe-${Date.now()}-do-not-log\n`;

  beforeAll(async () => {
    requireBuilt();
    client = testClient(inject('cluster').kubeconfigPath);
    ns = uniqueName('provider');
    await ensureNamespace(client, ns);
    await client.create(SECRETS, ns, { metadata: { name: 'store-credentials' }, stringData: { cloud: secretText } });
    ctx = { client, namespace: ns, scratchDir: tempDir('scratch') };
    const probe = pluginDir({ 'config-probe': 'config-probe.mjs' });
    pool = await createPluginPool({ pluginDirs: [probe.dir], selfCommand: selfCommand().command, logger: logs.logger, logLevel: 'debug', providerAliases: PROVIDER_ALIASES });
  });
  afterAll(async () => {
    await pool.shutdown();
    client.close();
    removeTempDirs();
  });

  const location = (spec: BackupStorageLocationSpec): BackupStorageLocation => newBackupStorageLocation('default', ns, spec);

  it('hands a third-party plugin the credential file and the CA certificate', async () => {
    const bsl = location({
      provider: 'test.stowage.dev/probe',
      objectStorage: { bucket: 'vault', prefix: '/cluster-a/', caCert: Buffer.from(PEM).toString('base64') },
      config: { region: 'eu-west-1', tier: 'cold' },
      credential: { name: 'store-credentials', key: 'cloud' },
    });
    const handle = pool.handle({ kind: 'backup', namespace: ns, name: 'probe' }, runLogs.logger);
    try {
      const store = await openObjectStore(ctx, handle, bsl);
      const seen = JSON.parse(await readAll(await store.getObject('vault', 'init-config'))) as Record<string, unknown>;
      expect(seen.keys).toEqual(['bucket', 'caCert', 'credentialsFile', 'prefix', 'region', 'tier']);
      expect(seen).toMatchObject({ bucket: 'vault', prefix: 'cluster-a', caCert: PEM, credentials: secretText, credentialsMode: '600' });
      expect(typeof seen.pid).toBe('number');
      expect(seen.pid).not.toBe(process.pid);
      // The private copy sits under the scratch directory, in the location's directory only the server can read.
      const dir = path.join(ctx.scratchDir, 'credentials');
      expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
      expect(fs.readdirSync(dir)).toEqual(['default']);
      const own = path.join(dir, 'default');
      expect(fs.statSync(own).mode & 0o777).toBe(0o700);
      expect(fs.readdirSync(own).map((f) => fs.readFileSync(path.join(own, f), 'utf8'))).toEqual([secretText]);
    } finally {
      handle.release();
    }
    const everything = JSON.stringify([...logs.entries, ...runLogs.entries]);
    expect(everything).toContain('probe store ready');
    expect(everything).not.toContain('do-not-log');
    expect(everything).not.toContain('aws_secret_access_key');
  });

  it("resolves Velero's provider name to the built-in S3 store, which signs with the same credential file", async () => {
    const bucket = uniqueName('alias');
    const s3 = inject('s3');
    const admin = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    admin.destroy();
    const handle = pool.handle({ kind: 'backup', namespace: ns, name: 'alias' }, runLogs.logger);
    try {
      for (const provider of ['velero.io/aws', 'aws']) {
        const store = await openObjectStore(ctx, handle, location({
          provider,
          objectStorage: { bucket, prefix: 'site' },
          config: { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true' },
          credential: { name: 'store-credentials', key: 'cloud' },
        }));
        async function* body(): AsyncGenerator<Uint8Array> {
          yield Buffer.from(`written through ${provider}`);
        }
        await store.putObject(bucket, `site/${provider}.txt`, body());
        expect(await readAll(await store.getObject(bucket, `site/${provider}.txt`))).toBe(`written through ${provider}`);
      }
      expect(handle.used()).toEqual(['ObjectStore stowage.dev/aws']);
    } finally {
      handle.release();
    }
    expect(JSON.stringify([...logs.entries, ...runLogs.entries])).not.toContain('do-not-log');
  });

  it('takes a provider name some plugin registers as that plugin, never as an alias', async () => {
    const own = await createPluginPool({ pluginDirs: [pluginDir({ 'velero-aws': 'config-probe.mjs' }).dir], selfCommand: selfCommand().command, logger: memoryLogger().logger, providerAliases: PROVIDER_ALIASES });
    const handle = own.handle({ kind: 'backup', namespace: ns, name: 'registered' });
    try {
      const store = await openObjectStore(ctx, handle, location({ provider: 'velero.io/aws', objectStorage: { bucket: 'vault' }, credential: { name: 'store-credentials', key: 'cloud' } }));
      const seen = JSON.parse(await readAll(await store.getObject('vault', 'init-config'))) as Record<string, unknown>;
      expect(seen).toMatchObject({ bucket: 'vault', credentials: secretText });
      expect(handle.used()).toEqual(['ObjectStore velero.io/aws']);
    } finally {
      handle.release();
      await own.shutdown();
    }
  });
});
