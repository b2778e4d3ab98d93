// What `backup-location create|set` flags ask for, parsed into changes to a location's spec and
// applied to it (pure: the commands do the reading of files and Secrets). Every problem is a
// UsageError naming the flag. Velero's flags where they exist (--provider, --bucket, --prefix,
// --config, --credential, --default, --access-mode, --backup-sync-period, --validation-frequency,
// --cacert), plus client-side encryption (--encryption-key-secret, --encryption-key-manager[-config],
// --require-encryption) and manifest signing (--signing-key-secret, or --signing false to opt out).
import {
  BSL_ACCESS_MODES,
  type BackupStorageLocationAccessMode,
  type BackupStorageLocationSpec,
  type SecretKeySelector,
} from '../../apis/v1/index.js';
import { formatDuration, parseDuration } from '../../util/duration.js';
import { errorMessage } from '../../util/errors.js';
import { UsageError } from './errors.js';
import { parseBool } from './flags.js';

/** The flags as commander hands them over. */
export interface LocationFlags {
  provider?: string;
  bucket?: string;
  prefix?: string;
  config?: Record<string, string>;
  credential?: Record<string, string>;
  default?: string | boolean;
  accessMode?: string;
  velero?: string | boolean;
  backupSyncPeriod?: string;
  validationFrequency?: string;
  cacert?: string;
  encryptionKeySecret?: string;
  encryptionKeyManager?: string;
  encryptionKeyManagerConfig?: Record<string, string>;
  requireEncryption?: string | boolean;
  signingKeySecret?: string;
  signing?: string | boolean;
}

/** A Secret entry named on the command line; `key` is undefined when only the Secret was named. */
export interface SecretRefFlag {
  name: string;
  key: string | undefined;
}

/** What the flags change; unset fields are left as they are. */
export interface LocationChanges {
  provider?: string;
  bucket?: string;
  prefix?: string;
  config?: Record<string, string>;
  credential?: SecretKeySelector;
  default?: boolean;
  accessMode?: BackupStorageLocationAccessMode;
  velero?: boolean;
  backupSyncPeriod?: string;
  validationFrequency?: string;
  /** Base64 of the PEM bundle (as the spec holds it). */
  caCert?: string;
  encryptionKeySecret?: SecretRefFlag;
  encryptionKeyManager?: string;
  encryptionKeyManagerConfig?: Record<string, string>;
  requireEncryption?: boolean;
  signingKeySecret?: SecretRefFlag;
  /** --signing: false opts out (spec.signing.disabled); true with no --signing-key-secret asks for a generated key. */
  signing?: boolean;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** What Kubernetes allows as a Secret data key. */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

function secretName(flag: string, name: string): string {
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    throw new UsageError(`--${flag}: "${name}" is not a valid Secret name (lower-case letters, digits, "-" and ".")`);
  }
  return name;
}

function secretKey(flag: string, key: string): string {
  if (key.length > 253 || !SECRET_KEY.test(key)) throw new UsageError(`--${flag}: "${key}" is not a valid Secret key (letters, digits, "-", "_" and ".")`);
  return key;
}

/** `NAME` or `NAME=KEY`. */
export function parseSecretRef(flag: string, text: string, keyRequired: boolean): SecretRefFlag {
  const t = text.trim();
  const eq = t.indexOf('=');
  const name = eq < 0 ? t : t.slice(0, eq);
  const key = eq < 0 ? undefined : t.slice(eq + 1);
  if (name === '') throw new UsageError(`--${flag} needs a Secret name: --${flag} NAME${keyRequired ? '=KEY' : '[=KEY]'}`);
  if (key === '' || (key === undefined && keyRequired)) throw new UsageError(`--${flag} needs the Secret's key too: --${flag} ${name}=KEY`);
  return { name: secretName(flag, name), key: key === undefined ? undefined : secretKey(flag, key) };
}

/** Velero's `--credential secret=key`: exactly one pair. */
function parseCredential(map: Record<string, string>): SecretKeySelector {
  const pairs = Object.entries(map);
  if (pairs.length !== 1) throw new UsageError(`--credential takes exactly one SECRET=KEY pair, not ${pairs.length}`);
  const [name, key] = pairs[0] as [string, string];
  return { name: secretName('credential', name), key: secretKey('credential', key) };
}

function duration(flag: string, text: string): string {
  let ms: number;
  try {
    ms = parseDuration(text, `--${flag}`);
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  if (ms < 0) throw new UsageError(`--${flag} must not be negative`);
  return formatDuration(ms);
}

/** A PEM bundle file's content as the spec holds it (base64), or why it cannot be used. */
export function caCertFromPem(file: string, pem: string): string {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new UsageError(`--cacert: ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return Buffer.from(pem, 'utf8').toString('base64');
}

function accessMode(text: string): BackupStorageLocationAccessMode {
  const m = BSL_ACCESS_MODES.find((x) => x.toLowerCase() === text.toLowerCase());
  if (m === undefined) throw new UsageError(`--access-mode must be ${BSL_ACCESS_MODES.join(' or ')}, not "${text}"`);
  return m;
}

/** Parses the flags (the CA file already read: `caPem`); checks what can be checked without the current spec. */
export function parseLocationFlags(f: LocationFlags, caPem?: { file: string; pem: string }): LocationChanges {
  const c: LocationChanges = {};
  if (f.provider !== undefined) {
    if (f.provider.trim() === '') throw new UsageError('--provider must not be empty');
    c.provider = f.provider.trim();
  }
  if (f.bucket !== undefined) {
    const b = f.bucket.trim();
    if (b === '' || b.includes('/')) throw new UsageError(`--bucket must be a bucket name without "/"${b.includes('/') ? ' (give the rest as --prefix)' : ''}`);
    c.bucket = b;
  }
  if (f.prefix !== undefined) c.prefix = f.prefix.replace(/^\/+|\/+$/g, '');
  if (f.config !== undefined) c.config = f.config;
  if (f.credential !== undefined) c.credential = parseCredential(f.credential);
  const def = parseBool('default', f.default);
  if (def !== undefined) c.default = def;
  if (f.accessMode !== undefined) c.accessMode = accessMode(f.accessMode);
  const velero = parseBool('velero', f.velero);
  if (velero !== undefined) c.velero = velero;
  if (f.backupSyncPeriod !== undefined) c.backupSyncPeriod = duration('backup-sync-period', f.backupSyncPeriod);
  if (f.validationFrequency !== undefined) c.validationFrequency = duration('validation-frequency', f.validationFrequency);
  if (caPem !== undefined) c.caCert = caCertFromPem(caPem.file, caPem.pem);
  if (f.encryptionKeySecret !== undefined && f.encryptionKeyManager !== undefined) {
    throw new UsageError('--encryption-key-secret and --encryption-key-manager cannot be used together: the location\'s keys live in a Secret or behind a KeyManager plugin');
  }
  if (f.encryptionKeySecret !== undefined) c.encryptionKeySecret = parseSecretRef('encryption-key-secret', f.encryptionKeySecret, false);
  if (f.encryptionKeyManager !== undefined) {
    if (f.encryptionKeyManager.trim() === '') throw new UsageError('--encryption-key-manager needs a KeyManager plugin name, e.g. example.com/kms');
    c.encryptionKeyManager = f.encryptionKeyManager.trim();
  }
  if (f.encryptionKeyManagerConfig !== undefined) c.encryptionKeyManagerConfig = f.encryptionKeyManagerConfig;
  const req = parseBool('require-encryption', f.requireEncryption);
  if (req !== undefined) c.requireEncryption = req;
  if (f.signingKeySecret !== undefined) c.signingKeySecret = parseSecretRef('signing-key-secret', f.signingKeySecret, false);
  const signing = parseBool('signing', f.signing);
  if (signing === false && c.signingKeySecret !== undefined) {
    throw new UsageError('--signing=false and --signing-key-secret cannot be used together: a location signs with a key, or opts out of signing');
  }
  if (signing !== undefined) c.signing = signing;
  return c;
}

/** Whether any flag asks for a change (a `set` without one is a usage error). */
export function hasChanges(c: LocationChanges): boolean {
  return Object.keys(c).length > 0;
}

const resolved = (flag: string, r: SecretRefFlag): SecretKeySelector => {
  if (r.key === undefined) throw new Error(`--${flag}: the Secret's key was not resolved`);
  return { name: r.name, key: r.key };
};

/**
 * `spec` with the changes applied (a copy; Secret keys must be resolved first). Config maps are
 * merged key by key; a key source replaces the other one.
 */
export function applyLocationChanges(spec: BackupStorageLocationSpec, c: LocationChanges): BackupStorageLocationSpec {
  const s = structuredClone(spec);
  if (c.provider !== undefined) s.provider = c.provider;
  if (c.bucket !== undefined) s.objectStorage.bucket = c.bucket;
  if (c.prefix !== undefined) {
    if (c.prefix === '') delete s.objectStorage.prefix;
    else s.objectStorage.prefix = c.prefix;
  }
  if (c.caCert !== undefined) s.objectStorage.caCert = c.caCert;
  if (c.config !== undefined) s.config = { ...(s.config ?? {}), ...c.config };
  if (c.credential !== undefined) s.credential = c.credential;
  if (c.default !== undefined) s.default = c.default;
  if (c.accessMode !== undefined) s.accessMode = c.accessMode;
  if (c.velero !== undefined) s.velero = c.velero;
  if (c.backupSyncPeriod !== undefined) s.backupSyncPeriod = c.backupSyncPeriod;
  if (c.validationFrequency !== undefined) s.validationFrequency = c.validationFrequency;
  const touchesEncryption = c.encryptionKeySecret !== undefined || c.encryptionKeyManager !== undefined || c.encryptionKeyManagerConfig !== undefined || c.requireEncryption !== undefined;
  if (touchesEncryption) {
    const e = { ...(s.encryption ?? {}) };
    if (c.encryptionKeySecret !== undefined) {
      e.keySecretRef = resolved('encryption-key-secret', c.encryptionKeySecret);
      delete e.keyManager;
    }
    if (c.encryptionKeyManager !== undefined) {
      e.keyManager = { provider: c.encryptionKeyManager, ...(c.encryptionKeyManagerConfig !== undefined ? { config: c.encryptionKeyManagerConfig } : {}) };
      delete e.keySecretRef;
    } else if (c.encryptionKeyManagerConfig !== undefined) {
      if (e.keyManager === undefined) throw new UsageError('--encryption-key-manager-config needs --encryption-key-manager (the location has no KeyManager to configure)');
      e.keyManager = { ...e.keyManager, config: { ...(e.keyManager.config ?? {}), ...c.encryptionKeyManagerConfig } };
    }
    if (c.requireEncryption !== undefined) e.required = c.requireEncryption;
    if (e.required === true && e.keySecretRef === undefined && e.keyManager === undefined) {
      throw new UsageError('--require-encryption needs a key: give --encryption-key-secret NAME[=KEY] or --encryption-key-manager PROVIDER');
    }
    s.encryption = e;
  }
  if (c.signingKeySecret !== undefined) s.signing = { keySecretRef: resolved('signing-key-secret', c.signingKeySecret) };
  else if (c.signing === false) s.signing = { disabled: true };
  return s;
}

/** The spec `create` submits: provider and bucket, then the rest of the flags. */
export function newLocationSpec(c: LocationChanges): BackupStorageLocationSpec {
  if (c.provider === undefined) throw new UsageError('--provider is required, e.g. --provider stowage.dev/aws');
  if (c.bucket === undefined) throw new UsageError('--bucket is required');
  return applyLocationChanges({ provider: c.provider, objectStorage: { bucket: c.bucket } }, c);
}
