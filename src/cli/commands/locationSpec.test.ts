import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation, type BackupStorageLocationSpec } from '../../apis/v1/index.js';
import { describeLocationText, encryptionWord, generatesSigningKey, locationRows, signingWord } from './backupLocation.js';
import { UsageError } from './errors.js';
import { applyLocationChanges, hasChanges, newLocationSpec, parseLocationFlags, parseSecretRef, type LocationFlags } from './locationSpec.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function usage(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    return (err as Error).message;
  }
  throw new Error('no UsageError');
}

describe('backup-location flags', () => {
  it('turns every flag into the spec Velero would write, plus encryption and signing', () => {
    const c = parseLocationFlags({
      provider: 'stowage.dev/aws', bucket: 'backups', prefix: '/cluster-a/',
      config: { region: 'eu-west-1', serverSideEncryption: 'aws:kms' }, credential: { 'cloud-credentials': 'cloud' },
      default: true, accessMode: 'readonly', backupSyncPeriod: '90s', validationFrequency: '0s',
      encryptionKeySecret: 'backup-keys=key-1', requireEncryption: true, signingKeySecret: 'signing=hmac',
    }, { file: 'ca.pem', pem: PEM });
    expect(newLocationSpec(c)).toEqual({
      provider: 'stowage.dev/aws',
      objectStorage: { bucket: 'backups', prefix: 'cluster-a', caCert: Buffer.from(PEM).toString('base64') },
      config: { region: 'eu-west-1', serverSideEncryption: 'aws:kms' },
      credential: { name: 'cloud-credentials', key: 'cloud' },
      default: true,
      accessMode: 'ReadOnly',
      backupSyncPeriod: '1m30s',
      validationFrequency: '0s',
      encryption: { keySecretRef: { name: 'backup-keys', key: 'key-1' }, required: true },
      signing: { keySecretRef: { name: 'signing', key: 'hmac' } },
    });
    const kms = parseLocationFlags({ provider: 'p', bucket: 'b', encryptionKeyManager: 'example.com/kms', encryptionKeyManagerConfig: { keyId: 'k1' } });
    expect(newLocationSpec(kms)).toEqual({ provider: 'p', objectStorage: { bucket: 'b' }, encryption: { keyManager: { provider: 'example.com/kms', config: { keyId: 'k1' } } } });
  });

  it('marks a Velero bucket with --velero, and clears the mark with --velero=false', () => {
    expect(newLocationSpec(parseLocationFlags({ provider: 'aws', bucket: 'velero', velero: true, accessMode: 'ReadOnly' })))
      .toEqual({ provider: 'aws', objectStorage: { bucket: 'velero' }, velero: true, accessMode: 'ReadOnly' });
    expect(newLocationSpec(parseLocationFlags({ provider: 'aws', bucket: 'velero', velero: 'false' }))).toEqual({ provider: 'aws', objectStorage: { bucket: 'velero' }, velero: false });
  });

  it('refuses bad input as usage errors naming the flag', () => {
    const cases: [LocationFlags, string][] = [
      [{ bucket: 'b' }, '--provider is required'],
      [{ provider: 'p' }, '--bucket is required'],
      [{ provider: 'p', bucket: 'b/c' }, '--bucket must be a bucket name without "/" (give the rest as --prefix)'],
      [{ provider: 'p', bucket: 'b', accessMode: 'WriteOnly' }, '--access-mode must be ReadWrite or ReadOnly, not "WriteOnly"'],
      [{ provider: 'p', bucket: 'b', validationFrequency: 'often' }, '--validation-frequency "often" is not a duration'],
      [{ provider: 'p', bucket: 'b', backupSyncPeriod: '-1m' }, '--backup-sync-period must not be negative'],
      [{ provider: 'p', bucket: 'b', default: 'maybe' }, '--default takes true or false, not "maybe"'],
      [{ provider: 'p', bucket: 'b', credential: { a: 'x', b: 'y' } }, '--credential takes exactly one SECRET=KEY pair, not 2'],
      [{ provider: 'p', bucket: 'b', credential: { Bad_Name: 'x' } }, '--credential: "Bad_Name" is not a valid Secret name'],
      [{ provider: 'p', bucket: 'b', encryptionKeySecret: 'k', encryptionKeyManager: 'm' }, '--encryption-key-secret and --encryption-key-manager cannot be used together'],
      [{ provider: 'p', bucket: 'b', encryptionKeySecret: '=key' }, '--encryption-key-secret needs a Secret name'],
      [{ provider: 'p', bucket: 'b', encryptionKeySecret: 'keys=' }, '--encryption-key-secret needs the Secret\'s key too: --encryption-key-secret keys=KEY'],
      [{ provider: 'p', bucket: 'b', signingKeySecret: 'sig=a b' }, '--signing-key-secret: "a b" is not a valid Secret key'],
      [{ provider: 'p', bucket: 'b', encryptionKeyManagerConfig: { a: 'b' } }, '--encryption-key-manager-config needs --encryption-key-manager'],
      [{ provider: 'p', bucket: 'b', requireEncryption: true }, '--require-encryption needs a key: give --encryption-key-secret NAME[=KEY] or --encryption-key-manager PROVIDER'],
    ];
    for (const [flags, message] of cases) expect(usage(() => newLocationSpec(parseLocationFlags(flags)))).toContain(message);
    expect(usage(() => parseLocationFlags({ provider: 'p', bucket: 'b' }, { file: 'x.pem', pem: 'not a cert' }))).toBe('--cacert: x.pem holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  });

  it('takes a Secret with or without its key', () => {
    expect(parseSecretRef('encryption-key-secret', 'keys', false)).toEqual({ name: 'keys', key: undefined });
    expect(parseSecretRef('encryption-key-secret', 'keys=key-1.v2', false)).toEqual({ name: 'keys', key: 'key-1.v2' });
    expect(usage(() => parseSecretRef('signing-key-secret', 'sig', true))).toBe('--signing-key-secret needs the Secret\'s key too: --signing-key-secret sig=KEY');
  });

  it('applies set changes to a spec: only what is given, config merged, one key source replacing the other', () => {
    const spec: BackupStorageLocationSpec = {
      provider: 'stowage.dev/aws', objectStorage: { bucket: 'b', prefix: 'p' }, config: { region: 'us-east-1', s3Url: 'https://m' },
      encryption: { keyManager: { provider: 'example.com/kms', config: { keyId: 'a' } }, required: true },
    };
    expect(hasChanges(parseLocationFlags({}))).toBe(false);
    const edited = applyLocationChanges(spec, parseLocationFlags({ config: { region: 'eu-west-1' }, encryptionKeyManagerConfig: { keyId: 'b', ring: 'r' }, prefix: '' }));
    expect(edited).toEqual({
      provider: 'stowage.dev/aws', objectStorage: { bucket: 'b' }, config: { region: 'eu-west-1', s3Url: 'https://m' },
      encryption: { keyManager: { provider: 'example.com/kms', config: { keyId: 'b', ring: 'r' } }, required: true },
    });
    expect(spec.config?.region).toBe('us-east-1');
    const toSecret = applyLocationChanges(spec, parseLocationFlags({ encryptionKeySecret: 'keys=k2' }));
    expect(toSecret.encryption).toEqual({ keySecretRef: { name: 'keys', key: 'k2' }, required: true });
    const back = applyLocationChanges(toSecret, parseLocationFlags({ encryptionKeyManager: 'example.com/kms' }));
    expect(back.encryption).toEqual({ keyManager: { provider: 'example.com/kms' }, required: true });
    expect(applyLocationChanges(toSecret, parseLocationFlags({ requireEncryption: 'false', default: 'true' }))).toMatchObject({ default: true, encryption: { required: false } });
  });
});

describe('backup-location output', () => {
  const loc = newBackupStorageLocation('vault', 'stowage', {
    provider: 'stowage.dev/aws', objectStorage: { bucket: 'b', prefix: 'site' }, default: true, credential: { name: 'creds', key: 'cloud' },
    encryption: { keySecretRef: { name: 'keys', key: 'k1' }, required: true }, signing: { keySecretRef: { name: 'sig', key: 'hmac' } },
  });
  loc.metadata.generation = 2;
  loc.status = { phase: 'Unavailable', message: 'bucket "b" is not reachable', lastValidationTime: '2025-01-02T03:04:05Z', observedGeneration: 1 };

  it('lists name, provider, bucket/prefix, phase, last validation, access mode, default, encryption and signing', () => {
    const bare = newBackupStorageLocation('plain', 'stowage', { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'x' } });
    expect(locationRows([loc, bare])).toEqual([
      ['vault', 'stowage.dev/aws', 'b/site', 'Unavailable', '2025-01-02 03:04:05 UTC', 'ReadWrite', 'true', 'required', 'on'],
      ['plain', 'stowage.dev/filesystem', 'x', 'Unknown', '<none>', 'ReadWrite', 'false', 'off', 'missing'],
    ]);
    expect(encryptionWord({ provider: 'p', objectStorage: { bucket: 'b' }, encryption: { keyManager: { provider: 'k' } } })).toBe('on');
    expect(encryptionWord({ provider: 'p', objectStorage: { bucket: 'b' }, encryption: { required: false } })).toBe('off');
  });

  it('describes where the location is, its keys by Secret and entry name, and whether its phase is for the current spec', () => {
    const text = describeLocationText(loc);
    expect(text).toMatch(/^Bucket: +b$/m);
    expect(text).toMatch(/^Prefix: +site$/m);
    expect(text).toMatch(/^Credential: +Secret creds, key cloud$/m);
    expect(text).toContain('Encryption:\n  Keys:      Secret keys, key k1\n  Required:  yes: unencrypted backups are not synced or restored\n');
    expect(text).toMatch(/^Signing: +Secret sig, key hmac$/m);
    expect(text).toMatch(/^Phase: +Unavailable \(for an earlier spec: the current one is not validated yet\)$/m);
    expect(text).toMatch(/^Message: +bucket "b" is not reachable$/m);
  });
});

describe('signing by default', () => {
  const base = { provider: 'p', bucket: 'b' };
  it('generates a key unless one is named, --signing=false opts out, or the location is Velero\'s', () => {
    expect(generatesSigningKey(parseLocationFlags(base))).toBe(true);
    expect(generatesSigningKey(parseLocationFlags({ ...base, signing: true }))).toBe(true);
    expect(generatesSigningKey(parseLocationFlags({ ...base, signingKeySecret: 'sig=hmac' }))).toBe(false);
    expect(generatesSigningKey(parseLocationFlags({ ...base, signing: 'false' }))).toBe(false);
    expect(generatesSigningKey(parseLocationFlags({ ...base, velero: true }))).toBe(false);
    expect(usage(() => generatesSigningKey(parseLocationFlags({ ...base, accessMode: 'ReadOnly' })))).toBe(
      '--access-mode ReadOnly reads backups another cluster wrote: give the signing key they were signed with (--signing-key-secret NAME[=KEY]), or --signing=false if they are unsigned',
    );
    expect(generatesSigningKey(parseLocationFlags({ ...base, accessMode: 'ReadOnly', signing: false }))).toBe(false);
  });

  it('--signing=false writes the explicit opt-out, and replaces a key on set', () => {
    expect(newLocationSpec(parseLocationFlags({ ...base, signing: false })).signing).toEqual({ disabled: true });
    const keyed: BackupStorageLocationSpec = { provider: 'p', objectStorage: { bucket: 'b' }, signing: { keySecretRef: { name: 'sig', key: 'hmac' } } };
    expect(applyLocationChanges(keyed, parseLocationFlags({ signing: 'false' })).signing).toEqual({ disabled: true });
    expect(applyLocationChanges({ ...keyed, signing: { disabled: true } }, { signingKeySecret: { name: 'sig', key: 'hmac' } }).signing).toEqual({ keySecretRef: { name: 'sig', key: 'hmac' } });
    expect(usage(() => parseLocationFlags({ ...base, signing: false, signingKeySecret: 'sig' }))).toBe(
      '--signing=false and --signing-key-secret cannot be used together: a location signs with a key, or opts out of signing',
    );
  });

  it('names signing on, disabled (the opt-out), off (Velero\'s layout) or missing (no spec.signing) in get and describe', () => {
    const spec = (signing?: BackupStorageLocationSpec['signing'], velero?: boolean): BackupStorageLocationSpec =>
      ({ provider: 'p', objectStorage: { bucket: 'b' }, ...(signing !== undefined ? { signing } : {}), ...(velero !== undefined ? { velero } : {}) });
    const loc = (s: BackupStorageLocationSpec, layout?: 'Stowage' | 'Velero') => {
      const l = newBackupStorageLocation('l', 'ns', s);
      if (layout !== undefined) l.status = { phase: 'Available', layout };
      return l;
    };
    expect(signingWord(loc(spec({ keySecretRef: { name: 's', key: 'k' } })))).toBe('on');
    expect(signingWord(loc(spec({ disabled: true })))).toBe('disabled');
    expect(signingWord(loc(spec()))).toBe('missing');
    expect(signingWord(loc(spec(), 'Stowage'))).toBe('missing');
    expect(signingWord(loc(spec(undefined, true)))).toBe('off');
    expect(signingWord(loc(spec(), 'Velero'))).toBe('off');
    // spec.velero: false overrules a layout recorded before the edit.
    expect(signingWord(loc(spec(undefined, false), 'Velero'))).toBe('missing');
    expect(describeLocationText(loc(spec({ disabled: true }))))
      .toMatch(/^Signing: +disabled \(spec\.signing\.disabled: true\): backups here are not tamper-evident$/m);
    expect(describeLocationText(loc(spec())))
      .toMatch(/^Signing: +missing \(no spec\.signing\): the location is Unavailable until it signs \(--signing-key-secret\) or opts out \(--signing=false\)$/m);
    expect(describeLocationText(loc(spec(), 'Velero'))).toMatch(/^Signing: +off \(Velero's layout: Velero signs nothing\)$/m);
  });
});
