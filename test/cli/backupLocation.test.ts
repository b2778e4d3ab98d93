// `stowage backup-location` against a running server: locations created from flags (Velero's,
// plus encryption and signing) that the server validates, the get/describe views in every output
// format, set (default switching, a fixed bucket validated at once, key rotation), delete, and bad
// input refused with a clear message and exit code 2.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import YAML from 'yaml';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { RESOURCES, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { mapLimit } from '../../src/util/concurrency.js';
import { uniqueName } from '../support/kube.js';
import { createS3CredentialsSecret, ensureNamespace, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type RunOptions } from './helpers.js';

describe('stowage backup-location with a running server', () => {
  const s3 = inject('s3');
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('cli-bsl');
  const bucket = `cli-bsl-${crypto.randomBytes(3).toString('hex')}`;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-cli-bsl-'));
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);
  const s3Config = `region=${s3.region},s3Url=${s3.endpoint},s3ForcePathStyle=true`;
  const location = (name: string): Promise<BackupStorageLocation> => client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, name);

  beforeAll(async () => {
    client = testClient(kubeconfig);
    const direct = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    await direct.send(new CreateBucketCommand({ Bucket: bucket }));
    direct.destroy();
    await ensureBuilt();
    await ensureNamespace(client, ns);
    await createS3CredentialsSecret(client, ns, 'cloud-credentials', s3);
    const secret = (name: string, data: Record<string, Buffer>) =>
      client.create(CORE.secrets, ns, { metadata: { name }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString('base64')])) });
    await secret('kek', { 'key-1': crypto.randomBytes(32) });
    await secret('signing', { hmac: crypto.randomBytes(32) });
    await secret('two-keys', { a: crypto.randomBytes(32), b: crypto.randomBytes(32) });
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns });
    opts = { kubeconfig, namespace: ns };
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('creates a location with encryption and signing, picking a Secret\'s only key; the server validates both', async () => {
    const r = await cli(
      'backup-location', 'create', 'primary', '--provider', 'stowage.dev/filesystem', '--bucket', 'backups', '--config', `root=${root}`,
      '--default', '--validation-frequency', '10s', '--backup-sync-period', '2m',
      '--encryption-key-secret', 'kek', '--require-encryption', '--signing-key-secret', 'signing=hmac', '--labels', 'team=a', '--wait',
    );
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Backup storage location "primary" created.\nWaiting for the server to validate the location...\n');
    expect(r.stdout).toContain('Backup storage location "primary" is Available.');
    const l = await location('primary');
    expect(l.metadata.labels).toEqual({ team: 'a' });
    expect(l.spec).toEqual({
      provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'backups' }, config: { root }, default: true,
      validationFrequency: '10s', backupSyncPeriod: '2m0s',
      encryption: { keySecretRef: { name: 'kek', key: 'key-1' }, required: true },
      signing: { keySecretRef: { name: 'signing', key: 'hmac' } },
    });
    expect(l.status?.phase).toBe('Available');
  });

  it('creates an S3 location with a credential and the Velero flags; --default takes over from the old default', async () => {
    const r = await cli(
      'backup-location', 'create', 'vault', '--provider', 'stowage.dev/aws', '--bucket', bucket, '--prefix', 'site/', '--config', s3Config,
      '--credential', 'cloud-credentials=cloud', '--access-mode', 'ReadOnly', '--signing=false', '--default', '--wait',
    );
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Backup storage location "primary" is no longer the default.');
    expect(r.stdout).toContain('Backup storage location "vault" is Available.');
    const v = await location('vault');
    expect(v.spec).toEqual({
      provider: 'stowage.dev/aws', objectStorage: { bucket, prefix: 'site' }, config: { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true' },
      credential: { name: 'cloud-credentials', key: 'cloud' }, default: true, accessMode: 'ReadOnly', signing: { disabled: true },
    });
    expect((await location('primary')).spec.default).toBe(false);
  });

  it('reports a location the server finds Unavailable (exit 1, with the reason), and validates a fixed bucket at once', async () => {
    const r = await cli('backup-location', 'create', 'typo', '--provider', 'stowage.dev/aws', '--bucket', `${bucket}-nope`, '--config', s3Config, '--credential', 'cloud-credentials=cloud', '--wait');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: backup storage location "typo" is Unavailable: bucket "${bucket}-nope" .*is not reachable`, 'm'));
    const fixed = await cli('backup-location', 'set', 'typo', '--bucket', bucket, '--prefix', 'other', '--wait');
    expect(fixed.code, show(fixed)).toBe(0);
    expect(fixed.stdout).toContain('Backup storage location "typo" updated.\nWaiting for the server to validate the location...\nBackup storage location "typo" is Available.\n');
    expect((await location('typo')).spec.objectStorage).toEqual({ bucket, prefix: 'other' });
  });

  it('lists locations with phase, last validation, access mode, default, encryption and signing, in every format', async () => {
    const r = await cli('backup-location', 'get');
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +PROVIDER +BUCKET\/PREFIX +PHASE +LAST VALIDATED +ACCESS MODE +DEFAULT +ENCRYPTION +SIGNING$/);
    expect(lines.slice(1).map((l) => l.split(/ {3,}/))).toEqual([
      ['primary', 'stowage.dev/filesystem', 'backups', 'Available', expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/), 'ReadWrite', 'false', 'required', 'on'],
      ['typo', 'stowage.dev/aws', `${bucket}/other`, 'Available', expect.stringMatching(/UTC$/), 'ReadWrite', 'false', 'off', 'on'],
      ['vault', 'stowage.dev/aws', `${bucket}/site`, 'Available', expect.stringMatching(/UTC$/), 'ReadOnly', 'true', 'off', 'disabled'],
    ]);
    const def = await cli('backup-location', 'get', '--default');
    expect(def.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/ +/)[0])).toEqual(['vault']);
    const one = YAML.parse((await cli('backup-location', 'get', 'primary', '-o', 'yaml')).stdout) as BackupStorageLocation;
    expect(one.kind).toBe('BackupStorageLocation');
    expect(one.spec.encryption?.keySecretRef).toEqual({ name: 'kek', key: 'key-1' });
    const all = JSON.parse((await cli('backup-location', 'get', '-o', 'json')).stdout) as { kind: string; items: BackupStorageLocation[] };
    expect(all.kind).toBe('BackupStorageLocationList');
    expect(all.items.map((i) => i.metadata.name)).toEqual(['primary', 'typo', 'vault']);
    const sel = await cli('backup-location', 'get', '-l', 'team=a');
    expect(sel.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/ +/)[0])).toEqual(['primary']);
  });

  it('describes a location: where it is, its keys by Secret and entry (never their values), its validation and events', async () => {
    const r = await cli('backup-location', 'describe', 'primary');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/^Provider: +stowage\.dev\/filesystem$/m);
    expect(r.stdout).toMatch(new RegExp(`^Config: +root=${root.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm'));
    expect(r.stdout).toContain('Encryption:\n  Keys:      Secret kek, key key-1\n  Required:  yes: unencrypted backups are not synced or restored\n');
    expect(r.stdout).toMatch(/^Signing: +Secret signing, key hmac$/m);
    expect(r.stdout).toMatch(/^Phase: +Available$/m);
    expect(r.stdout).toMatch(/^Last validated: +\d{4}-.* UTC$/m);
    expect(r.stdout).toMatch(/^ {2}Normal +Available +\S+ +location validated$/m);
    const kek = await client.get<{ data: Record<string, string> }>(CORE.secrets, ns, 'kek');
    expect(r.stdout).not.toContain(kek.data['key-1']);
    const j = JSON.parse((await cli('backup-location', 'describe', 'vault', '-o', 'json')).stdout) as BackupStorageLocation;
    expect(j.spec.accessMode).toBe('ReadOnly');
  });

  it('sets only what is given: rotates the encryption key, switches the default back, merges config', async () => {
    await client.patch(CORE.secrets, ns, 'kek', { data: { 'key-2': crypto.randomBytes(32).toString('base64') } }, 'merge');
    const r = await cli('backup-location', 'set', 'primary', '--encryption-key-secret', 'kek=key-2', '--default', '--config', 'extra=1');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Backup storage location "primary" updated.\nBackup storage location "vault" is no longer the default.\n');
    const p = await location('primary');
    expect(p.spec.encryption).toEqual({ keySecretRef: { name: 'kek', key: 'key-2' }, required: true });
    expect(p.spec.config).toEqual({ root, extra: '1' });
    expect(p.spec.default).toBe(true);
    expect(p.spec.signing).toEqual({ keySecretRef: { name: 'signing', key: 'hmac' } });
    expect((await location('vault')).spec.default).toBe(false);
  });

  it('refuses bad input with one clear line and exit code 2', async () => {
    const cases: [string[], RegExp][] = [
      [['backup-location', 'create', 'x', '--bucket', 'b'], /--provider is required/],
      [['backup-location', 'create', 'x', '--provider', 'stowage.dev/aws'], /--bucket is required/],
      [['backup-location', 'create', 'Bad_Name', '--provider', 'p', '--bucket', 'b'], /"Bad_Name" is not a valid backup storage location name/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--access-mode', 'rw'], /--access-mode must be ReadWrite or ReadOnly, not "rw"/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--config', 'region'], /--config: "region" is not of the form key=value/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--validation-frequency', 'daily'], /--validation-frequency "daily" is not a duration/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--cacert', path.join(root, 'absent.pem')], /--cacert: cannot read .*absent\.pem: ENOENT/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--require-encryption'], /--require-encryption needs a key/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--encryption-key-secret', 'two-keys'], /--encryption-key-secret: Secret .*\/two-keys has 2 entries \(a, b\); name the key: --encryption-key-secret two-keys=KEY/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--encryption-key-secret', 'k', '--encryption-key-manager', 'm'], /cannot be used together/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--credential', 'a=b,c=d'], /--credential takes exactly one SECRET=KEY pair, not 2/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--defualt'], /unknown option '--defualt'/],
      [['backup-location', 'set', 'primary'], /nothing to set: give at least one flag/],
      [['backup-location', 'set', 'primary', '--encryption-key-manager-config', 'a=b'], /--encryption-key-manager-config needs --encryption-key-manager/],
      [['backup-location', 'delete', 'primary'], /refusing to delete without confirmation: stdin is not a terminal, so pass --confirm/],
      [['backup-location', 'get', '-o', 'xml'], /unknown output format "xml"/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--access-mode', 'ReadOnly'],
        /--access-mode ReadOnly reads backups another cluster wrote: give the signing key they were signed with \(--signing-key-secret NAME\[=KEY\]\), or --signing=false if they are unsigned/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--signing=false', '--signing-key-secret', 'signing'], /--signing=false and --signing-key-secret cannot be used together/],
      [['backup-location', 'create', 'x', '--provider', 'p', '--bucket', 'b', '--signing', 'maybe'], /--signing takes true or false, not "maybe"/],
    ];
    // Four CLI processes at a time: each case is independent and creates nothing.
    const results = await mapLimit(cases, 4, ([args]) => cli(...args));
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i] as Awaited<ReturnType<typeof cli>>;
      expect(r.code, `${args.join(' ')}\n${show(r)}`).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr.split('\n').filter((l) => l.startsWith('error:')), args.join(' ')).toHaveLength(1);
    }
    // Nothing was created by any of them, no signing key Secret either.
    expect((await client.listAll<BackupStorageLocation>(RESOURCES.BackupStorageLocation, { namespace: ns })).items.map((l) => l.metadata.name).sort()).toEqual(['primary', 'typo', 'vault']);
    await expect(client.get(CORE.secrets, ns, 'x-signing')).rejects.toSatisfy(isNotFound);
    const missing = await cli('backup-location', 'get', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(`error: backup storage location "nope" not found in namespace ${ns}`);
    const dup = await cli('backup-location', 'create', 'vault', '--provider', 'p', '--bucket', 'b');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain(`error: backup storage location "vault" already exists in namespace ${ns}`);
  });

  it('deletes a location, keeping its backups in object storage', async () => {
    const r = await cli('backup-location', 'delete', 'typo', '--confirm');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Backup storage location "typo" deleted. Its backups stay in object storage');
    await expect(location('typo')).rejects.toSatisfy(isNotFound);
    const again = await cli('backup-location', 'delete', 'typo', '--confirm');
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`error: backup storage location "typo" not found in namespace ${ns}`);
  });

  it('signs a new location by default: create makes its key Secret, and the server validates it', async () => {
    const r = await cli('backup-location', 'create', 'signed', '--provider', 'stowage.dev/filesystem', '--bucket', 'signed', '--config', `root=${root}`, '--wait');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Signing key Secret "signed-signing" created (an HMAC key, entry "hmac"): copy it to any cluster that must verify these backups.\n' +
      'Backup storage location "signed" created.\n');
    expect(r.stdout).toContain('Backup storage location "signed" is Available.');
    const l = await location('signed');
    expect(l.spec.signing).toEqual({ keySecretRef: { name: 'signed-signing', key: 'hmac' } });
    const key = await client.get<{ data: Record<string, string> }>(CORE.secrets, ns, 'signed-signing');
    // 256 random bits, as base64 text: an HMAC key of 44 bytes.
    expect(Buffer.from(key.data.hmac ?? '', 'base64').toString()).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const d = await cli('backup-location', 'describe', 'signed');
    expect(d.stdout).toMatch(/^Signing: +Secret signed-signing, key hmac$/m);
    expect(d.stdout).not.toContain(key.data.hmac);
    // A second location of that name finds the key's Secret taken: it never reuses a key it did not make.
    await client.delete(RESOURCES.BackupStorageLocation, ns, 'signed');
    const again = await cli('backup-location', 'create', 'signed', '--provider', 'stowage.dev/filesystem', '--bucket', 'signed', '--config', `root=${root}`);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`error: Secret ${ns}/signed-signing already exists: name it with --signing-key-secret signed-signing=KEY to sign with it, or delete it to have a new key made`);
  });

  it('--signing=false is the explicit opt-out, which describe and the server log name', async () => {
    const r = await cli('backup-location', 'create', 'unsigned', '--provider', 'stowage.dev/filesystem', '--bucket', 'unsigned', '--config', `root=${root}`, '--signing=false', '--wait');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Signing is off for this location (--signing=false): its backups are not tamper-evident.\n');
    expect((await location('unsigned')).spec.signing).toEqual({ disabled: true });
    await expect(client.get(CORE.secrets, ns, 'unsigned-signing')).rejects.toSatisfy(isNotFound);
    const d = await cli('backup-location', 'describe', 'unsigned');
    expect(d.stdout).toMatch(/^Signing: +disabled \(spec\.signing\.disabled: true\): backups here are not tamper-evident$/m);
    await server.waitForOutput(/backup storage location unsigned: it is unsigned by choice \(spec\.signing\.disabled: true\): its backups are not tamper-evident/);
    const g = await cli('backup-location', 'get', 'unsigned');
    expect(g.stdout.trimEnd().split('\n')[1]?.split(/ {3,}/).at(-1)).toBe('disabled');
  });
});
