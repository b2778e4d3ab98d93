import { describe, expect, it } from 'vitest';
import { createScrubber, createValueRedactor, isSensitiveKey, secretValueParts } from './scrub.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('debug bundle scrubbing', () => {
  it('replaces known values in every encoding, however many there are', () => {
    const s = createScrubber();
    s.addSecretValue('hunter2-hunter2');
    const many = Array.from({ length: 20_000 }, (_, i) => `value-number-${i}-xyz`);
    for (const v of many) s.addSecretValue(v);
    expect(s.text('a hunter2-hunter2 b')).toBe('a [REDACTED] b');
    expect(s.text(`x ${b64('hunter2-hunter2')} y`)).toBe('x [REDACTED] y');
    expect(s.text(`JSON "${JSON.stringify('hunter2-hunter2')}"`)).not.toContain('hunter2');
    expect(s.text('value-number-19999-xyz and value-number-5-xyz')).toBe('[REDACTED] and [REDACTED]');
  });

  it('scrubs the parts of a credentials file, not only the whole file', () => {
    const file = '[default]\naws_access_key_id = AKIAABCDEFGHIJKLMNOP\naws_secret_access_key=wJalrXUtnFEMIK7MDENG\n';
    expect(secretValueParts(file)).toEqual(expect.arrayContaining(['AKIAABCDEFGHIJKLMNOP', 'wJalrXUtnFEMIK7MDENG']));
    const s = createScrubber();
    s.addSecretData({ data: { cloud: b64(file) } });
    expect(s.text('signing with wJalrXUtnFEMIK7MDENG failed')).toBe('signing with [REDACTED] failed');
    // Short values are left alone: "true" in a Secret must not blank every "true".
    const t = createScrubber();
    t.addSecretData({ stringData: { enabled: 'true' } });
    expect(t.size()).toBe(0);
    expect(t.text('default: true')).toBe('default: true');
    // Nor a service account's namespace and CA: public, and everywhere in a bundle.
    t.addSecretData({ data: { namespace: b64('team-a-production'), 'ca.crt': b64('-----BEGIN CERTIFICATE-----x'), token: b64('eyJtoken-token-token') } });
    expect(t.text('namespace team-a-production')).toBe('namespace team-a-production');
    expect(t.text('sa eyJtoken-token-token')).toBe('sa [REDACTED]');
  });

  it('matches the longest value first', () => {
    const r = createValueRedactor(['abcdefgh', 'abcdefgh-longer']);
    expect(r('x abcdefgh-longer y abcdefgh')).toBe('x [REDACTED] y [REDACTED]');
  });

  it('scrubs credential shapes and credential keys in text', () => {
    const s = createScrubber();
    expect(s.text('Authorization: Bearer abcdefghijklmnopqrstuvwxyz')).not.toContain('abcdefghijklmnop');
    expect(s.text('key AKIAABCDEFGHIJKLMNOP used')).toBe('key [REDACTED] used');
    expect(s.text('Annotations:  example.com/api-token=s3cr3t-v4lue')).toBe('Annotations:  example.com/api-token=[REDACTED]');
    expect(s.text('note=aws_secret_access_key=zzzzzzzzzz')).not.toContain('zzzzzzzzzz');
    expect(s.text('{"password": "pa55word!"}')).not.toContain('pa55word');
    // Names of Secrets are kept: they are what an operator needs to look at.
    expect(s.text('secretName=cloud-credentials')).toBe('secretName=cloud-credentials');
    expect(s.text('credential:\n  name: cloud-credentials')).toBe('credential:\n  name: cloud-credentials');
  });

  it('scrubs Secret data and credential-named keys in objects, keeping references to Secrets', () => {
    const s = createScrubber();
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: b64('pw-pw-pw-pw') }, stringData: { token: 'tok-tok-tok' } };
    expect(s.value(secret)).toEqual({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: '[REDACTED]' }, stringData: { token: '[REDACTED]' } });
    const bsl = {
      kind: 'BackupStorageLocation',
      metadata: { name: 'default', annotations: { 'example.com/db-password': 'hunter22', 'example.com/owner': 'team-a' } },
      spec: {
        config: { region: 'eu', secretAccessKey: 'wJalrXUtnFEMIK7MDENG', profile: 'default' },
        credential: { name: 'cloud-credentials', key: 'cloud' },
        encryption: { keySecretRef: { name: 'kek', key: 'key-1' } },
      },
      status: { encryption: { wrappedKey: 'AAAAwrapped', keyId: 'key-1' }, message: 'Authorization: Bearer abcdefghijklmnop' },
    };
    expect(s.value(bsl)).toEqual({
      kind: 'BackupStorageLocation',
      metadata: { name: 'default', annotations: { 'example.com/db-password': '[REDACTED]', 'example.com/owner': 'team-a' } },
      spec: {
        config: { region: 'eu', secretAccessKey: '[REDACTED]', profile: 'default' },
        credential: { name: 'cloud-credentials', key: 'cloud' },
        encryption: { keySecretRef: { name: 'kek', key: 'key-1' } },
      },
      status: { encryption: { wrappedKey: '[REDACTED]', keyId: 'key-1' }, message: 'Authorization: [REDACTED]' },
    });
  });

  it('tells credential keys from references', () => {
    for (const k of ['token', 'password', 'secretAccessKey', 'aws_access_key_id', 'credential', 'apiKey', 'client-secret']) expect(isSensitiveKey(k), k).toBe(true);
    for (const k of ['secretName', 'keySecretRef', 'tokenRef', 'region', 'name']) expect(isSensitiveKey(k), k).toBe(false);
  });
});
