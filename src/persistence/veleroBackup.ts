// A Velero backup's velero-backup.json (a velero.io/v1 Backup) as the Backup resource backup sync
// creates for it: read only, labelled imported-from=velero, with the spec fields whose meaning
// Stowage shares (filters, selectors, TTL) and the status Velero recorded. The file comes from a
// bucket someone else writes, so every field is type-checked and anything else is left out.
import {
  ANNOTATION_SYNCED_FROM, API_VERSION, IMPORTED_FROM_VELERO, LABEL_IMPORTED_FROM, LABEL_STORAGE_LOCATION, labelValue,
  type Backup, type BackupSpec, type BackupStatus,
} from '../apis/v1/index.js';
import { isSupportedFormatVersion } from '../archive/format.js';

/** Velero phases of a backup that is whole in the bucket and can be restored. */
const IMPORTABLE_PHASES = ['Completed', 'PartiallyFailed'] as const;
const STRING_LIST_FIELDS = ['includedNamespaces', 'excludedNamespaces', 'includedResources', 'excludedResources'] as const;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isTime = (v: unknown): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v));
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string');

/** Labels or annotations of the Velero object, less any in Stowage's own domain (a planted file must not set those). */
function foreignKeys(v: unknown): Record<string, string> {
  if (!isStringMap(v)) return {};
  return Object.fromEntries(Object.entries(v).filter(([k]) => !k.startsWith('stowage.dev/') && !k.includes('.stowage.dev/')));
}

function isLabelSelector(v: unknown): boolean {
  if (!isObject(v)) return false;
  if (v.matchLabels !== undefined && v.matchLabels !== null && !isStringMap(v.matchLabels)) return false;
  const exprs = v.matchExpressions;
  if (exprs === undefined || exprs === null) return true;
  return Array.isArray(exprs) && exprs.every((e) => isObject(e) && typeof e.key === 'string' && typeof e.operator === 'string' &&
    (e.values === undefined || e.values === null || isStringList(e.values)));
}

/** The spec fields Stowage's Backup shares with Velero's, as they are; the rest (snapshots, hooks, data movers...) is Velero's business. */
function mappedSpec(spec: Json, location: string): BackupSpec {
  const out: BackupSpec = {};
  for (const f of STRING_LIST_FIELDS) if (isStringList(spec[f])) out[f] = spec[f];
  if (typeof spec.includeClusterResources === 'boolean') out.includeClusterResources = spec.includeClusterResources;
  if (isLabelSelector(spec.labelSelector)) out.labelSelector = spec.labelSelector as BackupSpec['labelSelector'];
  if (Array.isArray(spec.orLabelSelectors) && spec.orLabelSelectors.every(isLabelSelector)) out.orLabelSelectors = spec.orLabelSelectors as BackupSpec['orLabelSelectors'];
  if (typeof spec.ttl === 'string' && spec.ttl !== '') out.ttl = spec.ttl;
  out.storageLocation = location;
  return out;
}

function mappedStatus(st: Json, phase: BackupStatus['phase']): BackupStatus {
  const out: BackupStatus = { phase };
  if (isTime(st.startTimestamp)) out.startTimestamp = st.startTimestamp;
  if (isTime(st.completionTimestamp)) out.completionTimestamp = st.completionTimestamp;
  if (isTime(st.expiration)) out.expiration = st.expiration;
  if (isCount(st.warnings)) out.warnings = st.warnings;
  if (isCount(st.errors)) out.errors = st.errors;
  if (typeof st.failureReason === 'string' && st.failureReason !== '') out.failureReason = st.failureReason;
  if (typeof st.formatVersion === 'string') out.formatVersion = st.formatVersion;
  const p = st.progress;
  if (isObject(p) && isCount(p.totalItems) && isCount(p.itemsBackedUp)) out.progress = { totalItems: p.totalItems, itemsBackedUp: p.itemsBackedUp };
  return out;
}

export type VeleroImport = { backup: Backup; status: BackupStatus } | { refusal: string };

/**
 * The Backup resource (and, separately, its status: a subresource) for the velero-backup.json found
 * at backups/`name`/ of location `location`, or why it is not imported.
 */
export function importVeleroBackup(raw: unknown, name: string, location: string, namespace: string): VeleroImport {
  if (!isObject(raw)) return { refusal: 'its velero-backup.json is not a JSON object' };
  if (raw.apiVersion !== 'velero.io/v1' || raw.kind !== 'Backup') {
    return { refusal: `its velero-backup.json is ${JSON.stringify(raw.apiVersion)}/${JSON.stringify(raw.kind)}, not a velero.io/v1 Backup` };
  }
  const meta = isObject(raw.metadata) ? raw.metadata : {};
  if (meta.name !== name) return { refusal: `its velero-backup.json describes a backup named ${JSON.stringify(meta.name)}` };
  const st = isObject(raw.status) ? raw.status : {};
  const phase = st.phase;
  if (!IMPORTABLE_PHASES.some((p) => p === phase)) {
    return { refusal: `Velero recorded it as ${typeof phase === 'string' ? phase : '(no phase)'}; only Completed and PartiallyFailed Velero backups are imported` };
  }
  if (st.formatVersion !== undefined && (typeof st.formatVersion !== 'string' || !isSupportedFormatVersion(st.formatVersion))) {
    return { refusal: `its tarball format ${JSON.stringify(st.formatVersion)} is not one Stowage reads (1.x)` };
  }
  const backup: Backup = {
    apiVersion: API_VERSION,
    kind: 'Backup',
    metadata: {
      name,
      namespace,
      labels: { ...foreignKeys(meta.labels), [LABEL_STORAGE_LOCATION]: labelValue(location), [LABEL_IMPORTED_FROM]: IMPORTED_FROM_VELERO },
      annotations: { ...foreignKeys(meta.annotations), [ANNOTATION_SYNCED_FROM]: location },
    },
    spec: mappedSpec(isObject(raw.spec) ? raw.spec : {}, location),
  };
  return { backup, status: mappedStatus(st, phase as BackupStatus['phase']) };
}

/** Whether backup sync imported the Backup from a Velero location (it is read only: nothing of it is Stowage's to write or delete). */
export function isVeleroImport(b: Pick<Backup, 'metadata'>): boolean {
  return b.metadata.labels?.[LABEL_IMPORTED_FROM] === IMPORTED_FROM_VELERO;
}

/** What deleting an imported Velero backup does, for the CLI, events and logs alike. */
export const VELERO_DELETE_NOTE = (name: string): string =>
  `backup "${name}" was imported from a Velero location: only its Backup resource (and its Restores' resources) are deleted, nothing in the Velero bucket is; ` +
  'backup sync imports it again while Velero\'s files for it are there (delete it with Velero, or remove the location, to be rid of it)';
