// `stowage backup-location create|get|describe|set|delete`: BackupStorageLocations from the CLI,
// with Velero's flags plus client-side encryption and manifest signing (locationSpec.ts). A
// location is validated by the server, not here: `--wait` waits for that validation and reports
// its outcome. Secret contents are never read except to find the one key of a Secret named
// without a key, and never printed.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Command, Option } from 'commander';
import {
  BSL_ACCESS_MODES,
  RESOURCES,
  newBackupStorageLocation,
  type BackupStorageLocation,
  type BackupStorageLocationSpec,
} from '../../apis/v1/index.js';
import { CORE, isAlreadyExists, isConflict, isNotFound, type KubeObject } from '../../kube/index.js';
import { sleep } from '../../util/backoff.js';
import { errorMessage } from '../../util/errors.js';
import { action, type Session } from './action.js';
import { failMissing, fetchNamed, printObjects } from './backup.js';
import { eventsSection } from './describe.js';
import { CliError, UsageError } from './errors.js';
import { checkName, keyValueList, parseTimeout } from './flags.js';
import { checkConfirmable, confirmOrStop, namesText } from './selection.js';
import type { CliContext } from './kubeContext.js';
import { addGlobalOptions, getInNamespace } from './kubeContext.js';
import {
  applyLocationChanges,
  hasChanges,
  newLocationSpec,
  parseLocationFlags,
  type LocationChanges,
  type LocationFlags,
  type SecretRefFlag,
} from './locationSpec.js';
import { formatData, formatFields, formatTable, formatTimestamp, mapOrNone, out, parseOutputFormat } from './output.js';
import { describeSubcommand, getSubcommand } from './subcommands.js';

const BSL = RESOURCES.BackupStorageLocation;

export function locationNotFound(name: string, namespace: string): CliError {
  return new CliError(`backup storage location "${name}" not found in namespace ${namespace}`);
}

function getLocation(ctx: CliContext, name: string): Promise<BackupStorageLocation> {
  return getInNamespace<BackupStorageLocation>(ctx, BSL, name, locationNotFound);
}

async function listLocations(ctx: CliContext, selector?: string): Promise<BackupStorageLocation[]> {
  return (await ctx.client.listAll<BackupStorageLocation>(BSL, { namespace: ctx.namespace, ...(selector !== undefined ? { labelSelector: selector } : {}) })).items;
}

// ---- flags that need the cluster or the disk ----------------------------------------------------

function readCaFile(file: string | undefined): { file: string; pem: string } | undefined {
  if (file === undefined) return undefined;
  try {
    return { file, pem: fs.readFileSync(file, 'utf8') };
  } catch (err) {
    throw new UsageError(`--cacert: cannot read ${file}: ${(err as { code?: string }).code ?? errorMessage(err)}`);
  }
}

/**
 * The key of a Secret named without one: its only entry. Reads the Secret's entry names (never
 * prints a value); several entries, none, or no right to read it: the user must name the key.
 */
async function onlyKeyOf(ctx: CliContext, flag: string, ref: SecretRefFlag): Promise<SecretRefFlag> {
  if (ref.key !== undefined) return ref;
  const how = `name the key: --${flag} ${ref.name}=KEY`;
  let secret: KubeObject & { data?: Record<string, string> };
  try {
    secret = await ctx.client.get(CORE.secrets, ctx.namespace, ref.name);
  } catch (err) {
    if (isNotFound(err)) throw new CliError(`--${flag}: Secret ${ctx.namespace}/${ref.name} not found (create it first, or ${how})`);
    throw new CliError(`--${flag}: cannot read Secret ${ctx.namespace}/${ref.name} to find its key (${errorMessage(err)}); ${how}`);
  }
  const keys = Object.keys(secret.data ?? {}).sort();
  if (keys.length !== 1) {
    throw new UsageError(`--${flag}: Secret ${ctx.namespace}/${ref.name} has ${keys.length === 0 ? 'no entries' : `${keys.length} entries (${keys.join(', ')})`}; ${how}`);
  }
  return { name: ref.name, key: keys[0] };
}

function withPlaceholderKeys(c: LocationChanges): LocationChanges {
  const fill = (r: SecretRefFlag): SecretRefFlag => ({ name: r.name, key: r.key ?? 'unresolved' });
  const r = { ...c };
  if (r.encryptionKeySecret !== undefined) r.encryptionKeySecret = fill(r.encryptionKeySecret);
  if (r.signingKeySecret !== undefined) r.signingKeySecret = fill(r.signingKeySecret);
  return r;
}

async function resolveSecretKeys(ctx: CliContext, c: LocationChanges): Promise<LocationChanges> {
  const r = { ...c };
  if (r.encryptionKeySecret !== undefined) r.encryptionKeySecret = await onlyKeyOf(ctx, 'encryption-key-secret', r.encryptionKeySecret);
  if (r.signingKeySecret !== undefined) r.signingKeySecret = await onlyKeyOf(ctx, 'signing-key-secret', r.signingKeySecret);
  return r;
}

/** Velero's rule: one default location. Clears `default` on every other one. */
async function clearOtherDefaults(ctx: CliContext, keep: string): Promise<void> {
  for (const l of await listLocations(ctx)) {
    if (l.metadata.name === keep || l.spec.default !== true) continue;
    await ctx.client.patch(BSL, ctx.namespace, l.metadata.name, { spec: { default: false } }, 'merge');
    out(`Backup storage location "${l.metadata.name}" is no longer the default.`);
  }
}

/** Waits until the server has validated the location's current spec; fails (exit 1) when it is Unavailable. */
async function waitValidated(ctx: CliContext, name: string, generation: number | undefined, timeoutMs: number): Promise<void> {
  out('Waiting for the server to validate the location...');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const l = await getLocation(ctx, name);
    const st = l.status;
    const current = st?.phase !== undefined && (generation === undefined || (st.observedGeneration ?? 0) >= generation);
    if (current && st?.phase === 'Available') {
      out(`Backup storage location "${name}" is Available.`);
      return;
    }
    if (current && st?.phase === 'Unavailable') throw new CliError(`backup storage location "${name}" is Unavailable: ${st.message ?? 'no reason recorded'}`);
    if (Date.now() > deadline) {
      throw new CliError(`the server did not validate backup storage location "${name}" within ${Math.round(timeoutMs / 1000)}s: is it running in namespace ${ctx.namespace}? (check with \`stowage version\`)`);
    }
    await sleep(250);
  }
}

// ---- create / set -------------------------------------------------------------------------------

interface WriteFlags extends LocationFlags {
  labels?: Record<string, string>;
  wait?: boolean;
  timeout: string;
}

/** The entry of a generated signing key Secret. */
export const GENERATED_SIGNING_ENTRY = 'hmac';

/** `<location>-signing`: the Secret create generates when no signing key is named. */
export function generatedSigningSecretName(location: string): string {
  return `${location}-signing`;
}

/**
 * Whether create generates a signing key: by default, unless a key is named or --signing=false opts
 * out. A Velero location is never signed (Velero signs nothing), and a ReadOnly one reads backups
 * another cluster signed, so a fresh key would verify none of them: that cluster's key, or the
 * opt-out, must be given.
 */
export function generatesSigningKey(c: LocationChanges): boolean {
  if (c.signingKeySecret !== undefined || c.signing === false || c.velero === true) return false;
  if (c.accessMode === 'ReadOnly') {
    throw new UsageError('--access-mode ReadOnly reads backups another cluster wrote: give the signing key they were signed with (--signing-key-secret NAME[=KEY]), or --signing=false if they are unsigned');
  }
  return true;
}

/** Creates the Secret of a fresh HMAC signing key (256 random bits, base64); refuses to reuse one that exists. */
async function createSigningSecret(ctx: CliContext, location: string): Promise<SecretRefFlag> {
  const name = generatedSigningSecretName(location);
  try {
    await ctx.client.create(CORE.secrets, ctx.namespace, {
      metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'stowage-cli' } },
      type: 'Opaque',
      data: { [GENERATED_SIGNING_ENTRY]: Buffer.from(crypto.randomBytes(32).toString('base64')).toString('base64') },
    });
  } catch (err) {
    if (isAlreadyExists(err)) {
      throw new CliError(`Secret ${ctx.namespace}/${name} already exists: name it with --signing-key-secret ${name}=KEY to sign with it, or delete it to have a new key made`);
    }
    throw new CliError(`creating the signing key Secret ${ctx.namespace}/${name} failed (${errorMessage(err)}); give an existing key with --signing-key-secret, or --signing=false to opt out of signing`);
  }
  return { name, key: GENERATED_SIGNING_ENTRY };
}

async function createLocation(cmd: Command, s: Session): Promise<void> {
  const f = cmd.opts<WriteFlags>();
  const name = checkName('backup storage location', cmd.processedArgs[0] as string);
  const timeoutMs = parseTimeout('timeout', f.timeout);
  const changes = parseLocationFlags(f, readCaFile(f.cacert));
  // Checked before the cluster is asked anything: which key of a Secret is used does not change the outcome.
  newLocationSpec(withPlaceholderKeys(changes));
  const generate = generatesSigningKey(changes);
  const ctx = s.client();
  if (generate) {
    try {
      await ctx.client.get(BSL, ctx.namespace, name);
      throw new CliError(`backup storage location "${name}" already exists in namespace ${ctx.namespace} (change it with \`stowage backup-location set ${name}\`)`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  const resolved = await resolveSecretKeys(ctx, changes);
  // The key exists before the location does, so the server's first validation finds it.
  if (generate) resolved.signingKeySecret = await createSigningSecret(ctx, name);
  const spec = newLocationSpec(resolved);
  const bsl = newBackupStorageLocation(name, ctx.namespace, spec);
  if (f.labels !== undefined) bsl.metadata.labels = f.labels;
  let created: BackupStorageLocation;
  try {
    created = await ctx.client.create<BackupStorageLocation>(BSL, ctx.namespace, bsl);
  } catch (err) {
    if (generate) await ctx.client.delete(CORE.secrets, ctx.namespace, generatedSigningSecretName(name)).catch(() => undefined);
    if (isAlreadyExists(err)) throw new CliError(`backup storage location "${name}" already exists in namespace ${ctx.namespace} (change it with \`stowage backup-location set ${name}\`)`);
    throw err;
  }
  if (generate) out(`Signing key Secret "${generatedSigningSecretName(name)}" created (an HMAC key, entry "${GENERATED_SIGNING_ENTRY}"): copy it to any cluster that must verify these backups.`);
  else if (spec.signing?.disabled === true) out('Signing is off for this location (--signing=false): its backups are not tamper-evident.');
  out(`Backup storage location "${name}" created.`);
  if (spec.default === true) await clearOtherDefaults(ctx, name);
  if (f.wait === true) await waitValidated(ctx, name, created.metadata.generation, timeoutMs);
  else out(`Run \`stowage backup-location get ${name}\` to see whether the server found it available.`);
}

async function setLocation(cmd: Command, s: Session): Promise<void> {
  const f = cmd.opts<WriteFlags>();
  const name = cmd.processedArgs[0] as string;
  const timeoutMs = parseTimeout('timeout', f.timeout);
  const changes = parseLocationFlags(f, readCaFile(f.cacert));
  if (!hasChanges(changes) && f.labels === undefined) throw new UsageError('nothing to set: give at least one flag (see stowage backup-location set --help)');
  const ctx = s.client();
  const resolved = await resolveSecretKeys(ctx, changes);
  const current = await getLocation(ctx, name);
  // --signing on a location without a key: a new one, as create makes.
  const generate = resolved.signing === true && resolved.signingKeySecret === undefined && current.spec.signing?.keySecretRef === undefined;
  if (generate) resolved.signingKeySecret = await createSigningSecret(ctx, name);
  const spec: BackupStorageLocationSpec = applyLocationChanges(current.spec, resolved);
  const next: BackupStorageLocation = { ...current, spec, metadata: { ...current.metadata, ...(f.labels !== undefined ? { labels: { ...(current.metadata.labels ?? {}), ...f.labels } } : {}) } };
  let updated: BackupStorageLocation;
  try {
    updated = await ctx.client.replace<BackupStorageLocation>(BSL, ctx.namespace, name, next);
  } catch (err) {
    if (isConflict(err)) throw new CliError(`backup storage location "${name}" changed while it was being set; run the command again`);
    throw err;
  }
  if (generate) out(`Signing key Secret "${generatedSigningSecretName(name)}" created (an HMAC key, entry "${GENERATED_SIGNING_ENTRY}"): copy it to any cluster that must verify these backups.`);
  out(`Backup storage location "${name}" updated.`);
  if (resolved.default === true) await clearOtherDefaults(ctx, name);
  if (f.wait === true) await waitValidated(ctx, name, updated.metadata.generation, timeoutMs);
}

// ---- get / describe -----------------------------------------------------------------------------

export const LOCATION_COLUMNS = ['NAME', 'PROVIDER', 'BUCKET/PREFIX', 'PHASE', 'LAST VALIDATED', 'ACCESS MODE', 'DEFAULT', 'ENCRYPTION', 'SIGNING'];

function bucketPrefix(spec: BackupStorageLocationSpec): string {
  const p = spec.objectStorage.prefix ?? '';
  return p === '' ? spec.objectStorage.bucket : `${spec.objectStorage.bucket}/${p}`;
}

/** Whether the location is (or is said to be) in Velero's layout, where signing does not apply: Velero signs nothing. */
function veleroLayout(l: Pick<BackupStorageLocation, 'spec' | 'status'>): boolean {
  return l.spec.velero === true || (l.spec.velero !== false && l.status?.layout === 'Velero');
}

/**
 * on (a key), disabled (the explicit opt-out), off (Velero's layout), or missing (no spec.signing
 * on a Stowage location: the server keeps it Unavailable until it signs or opts out).
 */
export function signingWord(l: Pick<BackupStorageLocation, 'spec' | 'status'>): string {
  if (l.spec.signing?.keySecretRef !== undefined) return 'on';
  if (l.spec.signing?.disabled === true) return 'disabled';
  return veleroLayout(l) ? 'off' : 'missing';
}

/** Describe's Signing line. */
function signingText(l: Pick<BackupStorageLocation, 'spec' | 'status'>): string {
  const r = l.spec.signing?.keySecretRef;
  if (r !== undefined) return `Secret ${r.name}, key ${r.key}`;
  if (l.spec.signing?.disabled === true) return 'disabled (spec.signing.disabled: true): backups here are not tamper-evident';
  if (veleroLayout(l)) return 'off (Velero\'s layout: Velero signs nothing)';
  return 'missing (no spec.signing): the location is Unavailable until it signs (--signing-key-secret) or opts out (--signing=false)';
}

/** off, on, or required (on, and unencrypted backups are refused). */
export function encryptionWord(spec: BackupStorageLocationSpec): string {
  const e = spec.encryption;
  if (e === undefined || (e.keySecretRef === undefined && e.keyManager === undefined)) return 'off';
  return e.required === true ? 'required' : 'on';
}

export function locationRows(items: readonly BackupStorageLocation[]): string[][] {
  return items.map((l) => [
    l.metadata.name,
    l.spec.provider,
    bucketPrefix(l.spec),
    l.status?.phase ?? 'Unknown',
    formatTimestamp(l.status?.lastValidationTime),
    l.spec.accessMode ?? 'ReadWrite',
    String(l.spec.default === true),
    encryptionWord(l.spec),
    signingWord(l),
  ]);
}

async function getLocations(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output: string; selector?: string; default?: boolean }>();
  const format = parseOutputFormat(o.output);
  const names = cmd.processedArgs[0] as string[];
  const ctx = s.client();
  const found = await fetchNamed<BackupStorageLocation>(ctx, names, () => listLocations(ctx, o.selector), (n) => getLocation(ctx, n));
  const { missing } = found;
  const items = o.default === true ? found.items.filter((l) => l.spec.default === true) : found.items;
  if (format === 'table') {
    if (items.length > 0) process.stdout.write(formatTable(LOCATION_COLUMNS, locationRows(items)));
    else if (missing.length === 0) process.stderr.write(`No ${o.default === true ? 'default ' : ''}backup storage locations found in namespace ${ctx.namespace}.\n`);
  } else {
    printObjects(items, 'BackupStorageLocationList', format, names.length === 1);
  }
  failMissing(missing);
}

export function describeLocationText(l: BackupStorageLocation): string {
  const { spec, status: st } = l;
  const ref = (r: { name: string; key: string } | undefined): string => (r === undefined ? '<none>' : `Secret ${r.name}, key ${r.key}`);
  let s = formatFields([
    ['Name', l.metadata.name],
    ['Namespace', l.metadata.namespace ?? ''],
    ['Labels', mapOrNone(l.metadata.labels)],
    ['Annotations', mapOrNone(l.metadata.annotations)],
  ]);
  s += '\n' + formatFields([
    ['Provider', spec.provider],
    ['Bucket', spec.objectStorage.bucket],
    ['Prefix', spec.objectStorage.prefix || '<none>'],
    ['CA certificate', spec.objectStorage.caCert ? 'set' : '<none>'],
    ['Config', mapOrNone(spec.config)],
    ['Credential', ref(spec.credential)],
    ['Default', String(spec.default === true)],
    ['Access mode', spec.accessMode ?? 'ReadWrite'],
    ['Layout', l.status?.layout !== undefined ? `${l.status.layout} (${l.status.layoutReason ?? ''})` : spec.velero === true ? 'Velero (spec.velero)' : '<not validated yet>'],
    ['Backup sync period', spec.backupSyncPeriod ?? '<server default>'],
    ['Validation frequency', spec.validationFrequency ?? '<server default>'],
  ]);
  const e = spec.encryption;
  const keys = e?.keySecretRef !== undefined ? ref(e.keySecretRef)
    : e?.keyManager !== undefined ? `KeyManager ${e.keyManager.provider}${e.keyManager.config !== undefined ? ` (config ${mapOrNone(e.keyManager.config)})` : ''}`
      : undefined;
  const signing: [string, string] = ['Signing', signingText(l)];
  s += '\n' + (keys === undefined ? formatFields([['Encryption', 'off'], signing]) : 'Encryption:\n' + formatFields([
    ['Keys', keys],
    ['Required', e?.required === true ? 'yes: unencrypted backups are not synced or restored' : 'no'],
  ], '  ') + formatFields([signing]));
  const stale = st?.phase !== undefined && st.observedGeneration !== undefined && l.metadata.generation !== undefined && st.observedGeneration < l.metadata.generation;
  s += '\n' + formatFields([
    ['Phase', `${st?.phase ?? 'Unknown'}${stale ? ' (for an earlier spec: the current one is not validated yet)' : ''}`],
    ...(st?.message !== undefined && st.message !== '' ? [['Message', st.message] as const] : []),
    ['Last validated', formatTimestamp(st?.lastValidationTime)],
    ['Last synced', formatTimestamp(st?.lastSyncedTime)],
  ]);
  return s;
}

async function describeLocations(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output: string }>();
  const format = parseOutputFormat(o.output);
  const names = cmd.processedArgs[0] as string[];
  const ctx = s.client();
  const { items, missing } = await fetchNamed<BackupStorageLocation>(ctx, names, () => listLocations(ctx), (n) => getLocation(ctx, n));
  if (format !== 'table') {
    process.stdout.write(formatData(items.length === 1 && names.length === 1 ? items[0] : items, format));
  } else {
    const parts: string[] = [];
    for (const l of items) parts.push(describeLocationText(l) + '\n' + (await eventsSection(ctx, 'BackupStorageLocation', l.metadata)));
    if (parts.length > 0) process.stdout.write(parts.join('\n---\n\n'));
    else if (missing.length === 0) process.stderr.write(`No backup storage locations found in namespace ${ctx.namespace}.\n`);
  }
  failMissing(missing);
}

// ---- delete -------------------------------------------------------------------------------------

async function deleteLocations(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ confirm?: boolean }>();
  const names = cmd.processedArgs[0] as string[];
  checkConfirmable(o.confirm);
  const ctx = s.client();
  for (const n of names) await getLocation(ctx, n);
  await confirmOrStop(o.confirm, `Delete ${namesText('backup storage location', 'backup storage locations', names)}? Its backups stay in object storage.`);
  for (const n of names) {
    try {
      await ctx.client.delete(BSL, ctx.namespace, n);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    out(`Backup storage location "${n}" deleted. Its backups stay in object storage; a location pointing there again makes them restorable.`);
  }
}

// ---- registration -------------------------------------------------------------------------------

/** The flags create and set share (set: every one optional, and only what is given changes). */
function addLocationFlags(cmd: Command, forCreate: boolean): Command {
  const c = forCreate
    ? cmd.option('--provider <name>', 'object store plugin, e.g. stowage.dev/aws (Velero\'s aws), stowage.dev/filesystem').option('--bucket <name>', 'bucket to store backups in')
    : cmd.option('--bucket <name>', 'bucket to store backups in');
  return c
    .option('--prefix <prefix>', 'key prefix inside the bucket, so several clusters can share it')
    .option('--config <key=value,...>', 'provider settings, e.g. region=us-east-1,s3Url=https://minio:9000,s3ForcePathStyle=true,serverSideEncryption=aws:kms', keyValueList('config', '='))
    .option('--credential <secret=key>', 'the Secret (in the server namespace) and key holding the provider credentials', keyValueList('credential', '='))
    .addOption(new Option('--default [bool]', 'make this the default location (any other default stops being one)'))
    .addOption(new Option('--access-mode <mode>', `${BSL_ACCESS_MODES.join(' or ')}; ReadOnly for restoring from another cluster's bucket`))
    .addOption(new Option('--velero [bool]', 'the bucket holds Velero\'s backups: import them read-only and never write there (unset: detected)'))
    .option('--backup-sync-period <duration>', 'how often to sync backups from the bucket, e.g. 1m; 0s: never')
    .option('--validation-frequency <duration>', 'how often the server checks the location, e.g. 1m; 0s: once per spec')
    .option('--cacert <file>', 'PEM file with the CA certificates of the object store, when it uses a private CA')
    .option('--encryption-key-secret <name[=key]>', 'encrypt backups with the key-encryption keys of this Secret; KEY is the entry new backups use (default: the Secret\'s only entry)')
    .option('--encryption-key-manager <provider>', 'encrypt backups with keys wrapped by this KeyManager plugin (a KMS) instead of a Secret')
    .option('--encryption-key-manager-config <key=value,...>', 'settings for the KeyManager plugin', keyValueList('encryption-key-manager-config', '='))
    .addOption(new Option('--require-encryption [bool]', 'refuse to sync or restore unencrypted backups of this location'))
    .option('--signing-key-secret <name[=key]>', 'sign every backup\'s manifest with the key in this Secret entry: an HMAC key, an Ed25519 private key, or only its public key to verify backups signed elsewhere (default: the Secret\'s only entry)')
    .addOption(new Option('--signing [bool]', forCreate
      ? 'sign backups (default true: without --signing-key-secret, create makes a Secret NAME-signing with a new HMAC key); --signing=false opts out, and backups here are not tamper-evident'
      : '--signing=false opts out of signing (backups here are not tamper-evident); true with no --signing-key-secret makes a Secret NAME-signing with a new HMAC key'))
    .option('--labels <labels>', 'labels for the location, e.g. team=a', keyValueList('labels', '='))
    .option('-w, --wait', 'wait until the server has validated the location, and fail if it is Unavailable')
    .addOption(new Option('--timeout <duration>', 'how long --wait waits').default('1m'));
}

export function backupLocationCommand(): Command {
  const bl = new Command('backup-location').description('Create and manage backup storage locations');

  const create = addGlobalOptions(
    addLocationFlags(
      new Command('create').description('Create a backup storage location').argument('<name>', 'name of the location').usage('NAME --provider PROVIDER --bucket BUCKET [flags]'),
      true,
    ),
  )
    .addHelpText(
      'after',
      `
Examples:
  stowage backup-location create default --provider stowage.dev/aws --bucket backups --prefix cluster-a \\
    --config region=eu-west-1 --credential cloud-credentials=cloud --default --wait
  stowage backup-location create vault --provider stowage.dev/aws --bucket vault --credential cloud-credentials=cloud \\
    --encryption-key-secret backup-keys=key-1 --require-encryption --signing-key-secret backup-signing=hmac
  stowage backup-location create dr --provider stowage.dev/aws --bucket prod-backups --access-mode ReadOnly \\
    --signing-key-secret prod-signing=hmac   # the key the other cluster signed with (a copy of its Secret)`,
    )
    .action(action(async (cmd, s) => createLocation(cmd, s)));

  const get = getSubcommand({
    listed: 'backup storage locations', plural: 'locations', selectorHelp: 'only locations with these labels', run: getLocations,
    more: (c) => c.option('--default', 'only the default location'),
  });
  const describe = describeSubcommand({
    description: 'Show the details of backup storage locations: where, how they are encrypted and signed, and their validation', plural: 'locations',
    run: describeLocations,
  });

  const set = addGlobalOptions(
    addLocationFlags(new Command('set').description('Change a backup storage location: only the given flags change; config entries are merged').argument('<name>', 'the location'), false),
  )
    .addHelpText(
      'after',
      `
Examples:
  stowage backup-location set default --default
  stowage backup-location set vault --encryption-key-secret backup-keys=key-2   # rotate: new backups use key-2
  stowage backup-location set default --config region=eu-central-1 --validation-frequency 5m`,
    )
    .action(action(async (cmd, s) => setLocation(cmd, s)));

  const del = addGlobalOptions(
    new Command('delete')
      .description('Delete backup storage locations (the backups in their buckets are kept)')
      .argument('<names...>', 'locations to delete')
      .option('--confirm', 'do not ask for confirmation'),
  ).action(action(async (cmd, s) => deleteLocations(cmd, s)));

  for (const c of [create, get, describe, set, del]) bl.addCommand(c);
  return bl;
}
