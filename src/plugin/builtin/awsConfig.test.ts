import { describe, expect, it } from 'vitest';
import { decodeCaCert, parseAwsConfig } from './awsConfig.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('parseAwsConfig', () => {
  it('applies defaults', () => {
    expect(parseAwsConfig({ bucket: 'b' })).toEqual({
      bucket: 'b',
      prefix: undefined,
      region: 'us-east-1',
      endpoint: undefined,
      forcePathStyle: false,
      insecureSkipTLSVerify: false,
      caCert: undefined,
      profile: undefined,
      credentialsFile: undefined,
      sse: { kind: 'none' },
    });
  });

  it('reads every key', () => {
    const c = parseAwsConfig({
      bucket: 'b',
      prefix: 'p',
      region: 'eu-west-1',
      s3Url: 'https://minio.local:9000',
      s3ForcePathStyle: 'true',
      insecureSkipTLSVerify: 'false',
      caCert: Buffer.from(PEM).toString('base64'),
      profile: 'backup',
      credentialsFile: '/dev/null',
      serverSideEncryption: 'aws:kms',
      kmsKeyId: 'alias/backups',
    });
    expect(c).toMatchObject({
      region: 'eu-west-1', endpoint: 'https://minio.local:9000', forcePathStyle: true, caCert: PEM, profile: 'backup',
      sse: { kind: 'aws:kms', kmsKeyId: 'alias/backups' },
    });
  });

  it('rejects unknown keys, bad booleans, bad URLs and missing credential files without echoing values', () => {
    expect(() => parseAwsConfig({ secretKey: 'hunter2' })).toThrow('unknown config key(s) secretKey');
    expect(() => parseAwsConfig({ secretKey: 'hunter2' })).not.toThrow(/hunter2/);
    expect(() => parseAwsConfig({ s3ForcePathStyle: 'yes' })).toThrow('s3ForcePathStyle must be "true" or "false"');
    expect(() => parseAwsConfig({ s3Url: 'not a url' })).toThrow('is not a URL');
    expect(() => parseAwsConfig({ s3Url: 'ftp://x' })).toThrow('must be http(s)');
    expect(() => parseAwsConfig({ credentialsFile: '/nonexistent/creds' })).toThrow('credentialsFile /nonexistent/creds does not exist');
  });
});

describe('decodeCaCert', () => {
  it('accepts PEM text or base64 of it', () => {
    expect(decodeCaCert(PEM)).toBe(PEM);
    expect(decodeCaCert(Buffer.from(PEM).toString('base64'))).toBe(PEM);
    expect(() => decodeCaCert('bm90IGEgY2VydA==')).toThrow('neither a PEM bundle nor base64 of one');
  });
});
