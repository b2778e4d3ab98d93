// Init config of stowage.dev/aws, parsed and checked. Credentials: plugins start with a minimal
// environment (no AWS_* variables of the server), so the server passes them through Init config:
//   credentialsFile  path of a shared-credentials-format file the server wrote (0600) from the
//                    BackupStorageLocation's credential Secret; `profile` picks the section.
// Without it the SDK's default chain runs in the plugin's own environment (e.g. the standard
// AWS_* variables when the plugin is started by hand for debugging, or an instance role).
// Server-side encryption (serverSideEncryption, kmsKeyId, customerKeyEncryptionFile): awsSse.ts.
// Nothing here is ever logged: config values may point at or contain secrets.
import fs from 'node:fs';
import { parseServerSideEncryption, type ServerSideEncryption } from './awsSse.js';

export interface AwsStoreConfig {
  bucket: string | undefined;
  prefix: string | undefined;
  region: string;
  endpoint: string | undefined;
  forcePathStyle: boolean;
  insecureSkipTLSVerify: boolean;
  /** PEM bundle to trust in addition to (instead of) the system CAs. */
  caCert: string | undefined;
  profile: string | undefined;
  credentialsFile: string | undefined;
  sse: ServerSideEncryption;
}

const KEYS = [
  'bucket', 'prefix', 'region', 's3Url', 's3ForcePathStyle', 'insecureSkipTLSVerify', 'caCert', 'profile', 'credentialsFile',
  'serverSideEncryption', 'kmsKeyId', 'customerKeyEncryptionFile',
];

function bool(config: Record<string, string>, key: string): boolean {
  const v = config[key];
  if (v === undefined || v === '') return false;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new Error(`aws object store: config key ${key} must be "true" or "false", not ${JSON.stringify(v)}`);
}

/** Accepts a PEM bundle as text or base64 (as in a BackupStorageLocation's caCert). */
export function decodeCaCert(v: string): string {
  if (v.includes('-----BEGIN')) return v;
  const decoded = Buffer.from(v, 'base64').toString('utf8');
  if (!decoded.includes('-----BEGIN')) throw new Error('aws object store: caCert is neither a PEM bundle nor base64 of one');
  return decoded;
}

export function parseAwsConfig(config: Record<string, string>): AwsStoreConfig {
  const unknown = Object.keys(config).filter((k) => !KEYS.includes(k));
  if (unknown.length > 0) throw new Error(`aws object store: unknown config key(s) ${unknown.join(', ')} (known: ${KEYS.join(', ')})`);
  const endpoint = config.s3Url !== undefined && config.s3Url !== '' ? config.s3Url : undefined;
  if (endpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw new Error(`aws object store: s3Url ${JSON.stringify(endpoint)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`aws object store: s3Url must be http(s), not ${url.protocol}`);
  }
  const credentialsFile = config.credentialsFile !== undefined && config.credentialsFile !== '' ? config.credentialsFile : undefined;
  if (credentialsFile !== undefined && !fs.existsSync(credentialsFile)) {
    throw new Error(`aws object store: credentialsFile ${credentialsFile} does not exist`);
  }
  const nonEmpty = (k: string): string | undefined => (config[k] !== undefined && config[k] !== '' ? config[k] : undefined);
  const caCert = nonEmpty('caCert');
  return {
    bucket: nonEmpty('bucket'),
    prefix: nonEmpty('prefix'),
    region: nonEmpty('region') ?? 'us-east-1',
    endpoint,
    forcePathStyle: bool(config, 's3ForcePathStyle'),
    insecureSkipTLSVerify: bool(config, 'insecureSkipTLSVerify'),
    caCert: caCert !== undefined ? decodeCaCert(caCert) : undefined,
    profile: nonEmpty('profile'),
    credentialsFile,
    sse: parseServerSideEncryption(config, endpoint),
  };
}
