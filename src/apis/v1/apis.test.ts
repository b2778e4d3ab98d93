import { describe, expect, it } from 'vitest';
import {
  API_VERSION,
  BACKUP_PHASES,
  KINDS,
  RESTORE_PHASES,
  LABEL_BACKUP_NAME,
  RESOURCES,
  buildCrd,
  isBackupTerminal,
  isRestoreTerminal,
  labelValue,
  newBackup,
  newDeleteBackupRequest,
  type BackupPhase,
  type DownloadTargetKind,
  type RestorePhase,
  type StowageKind,
} from './index.js';
import type { DOWNLOAD_TARGET_KINDS } from './constants.js';

// Compile-time: the generated unions and the runtime arrays are the same sets.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const phasesMatch: [Same<BackupPhase, (typeof BACKUP_PHASES)[number]>, Same<RestorePhase, (typeof RESTORE_PHASES)[number]>, Same<DownloadTargetKind, (typeof DOWNLOAD_TARGET_KINDS)[number]>] = [true, true, true];

/** Walks an OpenAPI schema and returns every structural-schema violation found. */
function structuralProblems(node: unknown, at: string): string[] {
  if (typeof node !== 'object' || node === null) return [`${at}: not an object`];
  const n = node as Record<string, unknown>;
  const out: string[] = [];
  if (n.type === undefined) out.push(`${at}: no type`);
  for (const k of Object.keys(n)) {
    if (k.startsWith('x-kubernetes-') && k !== 'x-kubernetes-preserve-unknown-fields') out.push(`${at}: ${k} is not allowed (Kubernetes 1.20)`);
    if (['$ref', 'allOf', 'oneOf', 'anyOf', 'not', 'definitions', 'default'].includes(k)) out.push(`${at}: ${k} is not used`);
  }
  if (n.properties !== undefined) {
    for (const [k, v] of Object.entries(n.properties as Record<string, unknown>)) out.push(...structuralProblems(v, `${at}.${k}`));
  }
  if (n.items !== undefined) out.push(...structuralProblems(n.items, `${at}[]`));
  if (typeof n.additionalProperties === 'object') out.push(...structuralProblems(n.additionalProperties, `${at}{}`));
  return out;
}

describe('apis/v1', () => {
  it('keeps phase unions and value arrays in step', () => {
    expect(phasesMatch).toEqual([true, true, true]);
  });

  it('renders structural schemas with a status subresource for every kind', () => {
    expect(KINDS.map((k) => k.kind).sort()).toEqual((Object.keys(RESOURCES) as StowageKind[]).sort());
    for (const def of KINDS) {
      const crd = buildCrd(def);
      const v = crd.spec.versions[0];
      expect(v?.subresources).toEqual({ status: {} });
      expect(structuralProblems(v?.schema.openAPIV3Schema, def.kind)).toEqual([]);
      const cols = (v?.additionalPrinterColumns ?? []).map((c) => c.name);
      expect(cols[0]).toBe('Phase');
      expect(cols.at(-1)).toBe('Age');
      expect(crd.metadata.name).toBe(`${def.plural}.stowage.dev`);
      expect(RESOURCES[def.kind as StowageKind].resource).toBe(def.plural);
    }
  });

  it('gives Backup the expiration and storage location columns', () => {
    const backup = KINDS.find((k) => k.kind === 'Backup');
    expect(backup?.printerColumns.map((c) => c.name)).toEqual(['Phase', 'Items', 'Errors', 'Warnings', 'Expiration', 'Storage Location', 'Age']);
  });

  it('builds objects with apiVersion, kind and metadata', () => {
    expect(newBackup('b1', 'stowage', { ttl: '1h' }, { a: 'b' })).toEqual({
      apiVersion: API_VERSION,
      kind: 'Backup',
      metadata: { name: 'b1', namespace: 'stowage', labels: { a: 'b' } },
      spec: { ttl: '1h' },
    });
    const dbr = newDeleteBackupRequest('nightly', 'stowage');
    expect(dbr.metadata).toEqual({ name: '', generateName: 'nightly-', namespace: 'stowage', labels: { [LABEL_BACKUP_NAME]: 'nightly' } });
    expect(dbr.spec.backupName).toBe('nightly');
  });

  it('keeps label values within 63 characters and distinct', () => {
    expect(labelValue('short')).toBe('short');
    const a = labelValue(`${'x'.repeat(70)}-a`);
    const b = labelValue(`${'x'.repeat(70)}-b`);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(b.length).toBeLessThanOrEqual(63);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/);
  });

  it('knows which backup phases are final', () => {
    expect(BACKUP_PHASES.filter((p) => isBackupTerminal(p))).toEqual(['FailedValidation', 'Completed', 'PartiallyFailed', 'Failed', 'Canceled']);
    expect(RESTORE_PHASES.filter((p) => isRestoreTerminal(p))).toEqual(['FailedValidation', 'Completed', 'PartiallyFailed', 'Failed', 'Canceled']);
    expect(isBackupTerminal(undefined)).toBe(false);
  });
});
