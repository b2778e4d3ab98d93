// Nothing in a Backup, Restore or Schedule spec is accepted and ignored. This walks every field
// the CRD schemas declare (src/apis/v1/kinds.ts, what deploy/crds is rendered from) and requires
// each to be in the table below: either honoured, naming the tests that prove it (each must exist
// and mention the field), or refused, which is proved here by setting the field and running the
// controller's own validation (validateBackup, validateRestore, validateSchedule). A field added
// to a schema without an entry fails this test, named.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  KINDS, LABEL_SCHEDULE_NAME, newBackup, newBackupStorageLocation, newRestore, newSchedule,
  type Backup, type BackupSpec, type BackupStorageLocation, type Restore, type RestoreSpec, type Schema, type StowageKind,
} from '../apis/v1/index.js';
import { DEFAULT_CONFIG } from '../config/index.js';
import type { KubeObject } from '../kube/index.js';
import { newRestoreRequest } from '../restore/index.js';
import type { Informer } from '../runtime/index.js';
import { fixedClock } from '../util/clock.js';
import { SPEC_LIST_CAPS } from '../selection/filters.js';
import { validateBackup } from './backup.js';
import type { ControllerContext } from './run/context.js';
import { validateRestore } from './restore.js';
import { backupFromSchedule, validateSchedule } from '../schedule/plan.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

type Row = { refused: true } | { honouredBy: readonly string[] };
const refused: Row = { refused: true };
const by = (...files: string[]): Row => ({ honouredBy: files });

const SELECTOR = 'src/selection/labels.test.ts';
/** A label selector's fields, under `at` (labelSelector, orLabelSelectors[]). */
function selectorRows(at: string): Record<string, Row> {
  return {
    [`${at}.matchLabels`]: by(SELECTOR, 'test/backup/backup.test.ts'),
    [`${at}.matchExpressions`]: by(SELECTOR, 'test/backup/backup.test.ts'),
    [`${at}.matchExpressions[].key`]: by(SELECTOR),
    [`${at}.matchExpressions[].operator`]: by(SELECTOR),
    [`${at}.matchExpressions[].values`]: by(SELECTOR),
  };
}

// Item selection (issue 21): the scope-specific resource lists and name patterns, on Backup and Restore alike.
const SCOPED = 'src/selection/scopedResources.test.ts';
const NAMES = 'src/selection/names.test.ts';
const SELECTION = 'test/controller/selection.test.ts';
const SELECTION_ROWS: Record<string, Row> = {
  'spec.includedClusterScopedResources': by(SELECTION, SCOPED),
  'spec.excludedClusterScopedResources': by(SELECTION, SCOPED),
  'spec.includedNamespaceScopedResources': by(SELECTION, SCOPED),
  'spec.excludedNamespaceScopedResources': by(SELECTION, SCOPED),
  'spec.includedNames': by(SELECTION, NAMES),
  'spec.excludedNames': by(SELECTION, NAMES),
};

// Backup hooks (issue 36): checked by validation (selection/hooks.test.ts), run in real containers on
// the real node (test/incluster/hooks.suite.ts), Velero's manifests applied unchanged.
const HOOKS_UNIT = 'src/selection/hooks.test.ts';
const HOOKS_NODE = 'test/incluster/hooks.suite.ts';
function execRows(at: string): Record<string, Row> {
  return {
    [at]: by(HOOKS_UNIT, HOOKS_NODE),
    [`${at}[].exec`]: by(HOOKS_UNIT, HOOKS_NODE),
    [`${at}[].exec.container`]: by(HOOKS_UNIT, HOOKS_NODE),
    [`${at}[].exec.command`]: by(HOOKS_UNIT, HOOKS_NODE),
    [`${at}[].exec.onError`]: by(HOOKS_UNIT, HOOKS_NODE),
    [`${at}[].exec.timeout`]: by(HOOKS_UNIT, HOOKS_NODE),
  };
}
const HOOK_ROWS: Record<string, Row> = {
  'spec.hooks': by(HOOKS_UNIT, HOOKS_NODE),
  'spec.hooks.resources': by(HOOKS_UNIT, HOOKS_NODE),
  'spec.hooks.resources[].name': by(HOOKS_UNIT, HOOKS_NODE),
  'spec.hooks.resources[].includedNamespaces': by(HOOKS_UNIT, HOOKS_NODE),
  'spec.hooks.resources[].excludedNamespaces': by(HOOKS_UNIT),
  'spec.hooks.resources[].includedResources': by(HOOKS_UNIT, HOOKS_NODE),
  'spec.hooks.resources[].excludedResources': by(HOOKS_UNIT),
  'spec.hooks.resources[].labelSelector': by(HOOKS_UNIT, HOOKS_NODE),
  ...selectorRows('spec.hooks.resources[].labelSelector'),
  ...execRows('spec.hooks.resources[].pre'),
  ...execRows('spec.hooks.resources[].post'),
};
const VOLUMES_SUITE = 'test/incluster/volumes.suite.ts';

const BACKUP_ROWS: Record<string, Row> = {
  'spec.includedNamespaces': by('test/controller/backup.test.ts', 'src/backup/request.test.ts'),
  'spec.excludedNamespaces': by('src/backup/request.test.ts', 'src/selection/filters.test.ts'),
  'spec.includedResources': by('test/backup/backup.test.ts', 'src/backup/request.test.ts'),
  'spec.excludedResources': by('test/backup/backup.test.ts', 'src/backup/request.test.ts'),
  'spec.includeClusterResources': by('test/backup/backup.test.ts', 'src/backup/request.test.ts'),
  'spec.labelSelector': by('test/backup/backup.test.ts', 'src/backup/request.test.ts'),
  ...selectorRows('spec.labelSelector'),
  'spec.orLabelSelectors': by('test/backup/backup.test.ts', 'src/backup/request.test.ts'),
  ...selectorRows('spec.orLabelSelectors[]'),
  'spec.ttl': by('test/lifecycle/deletion.test.ts', 'test/lifecycle/retention.test.ts', 'src/schedule/gc.test.ts'),
  'spec.storageLocation': by('test/controller/backup.test.ts', 'test/lifecycle/disasterRecovery.test.ts'),
  'spec.orderedResources': by('src/backup/request.test.ts'),
  // Implemented with issue 17's discovery work (part 1), whose tests are in discovery.test.ts.
  'spec.includeAllGroupVersions': by('test/backup/discovery.test.ts'),
  'spec.cancel': by('test/controller/cancel.test.ts', 'src/webhook/admission.test.ts'),
  ...HOOK_ROWS,
  // CSI volume snapshots (issue 37): taken, restored and deleted on the real node.
  'spec.snapshotVolumes': by(VOLUMES_SUITE, 'src/volumes/volumes.test.ts'),
  'spec.csiSnapshotTimeout': by(VOLUMES_SUITE, 'src/selection/specErrors.test.ts'),
  // Refused: Stowage snapshots through CSI only; no VolumeSnapshotter plugin or location takes snapshots.
  'spec.volumeSnapshotLocations': refused,
  // Refused: the data mover (snapshot data copied into the bucket) is not implemented.
  'spec.snapshotMoveData': refused,
  'spec.datamover': refused,
  // Refused: file-system backup (Velero's node agent with Kopia or Restic) is not implemented.
  'spec.defaultVolumesToFsBackup': refused,
  'spec.defaultVolumesToRestic': refused,
  'spec.uploaderConfig': refused,
  'spec.itemOperationTimeout': refused,
  'spec.resourcePolicy': refused,
  'spec.metadata': refused,
  ...SELECTION_ROWS,
};

// Restore hooks (issue 36): validated and matched in src/hooks/restoreSpec.test.ts, run in real
// containers on the real node in test/incluster/restoreHooks.suite.ts.
const RHOOKS_UNIT = 'src/hooks/restoreSpec.test.ts';
const RHOOKS_NODE = 'test/incluster/restoreHooks.suite.ts';
const HOOK = 'spec.hooks.resources[]';
const RESTORE_HOOK_ROWS: Record<string, Row> = {
  'spec.hooks': by(RHOOKS_NODE, RHOOKS_UNIT),
  'spec.hooks.resources': by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.name`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.includedNamespaces`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.excludedNamespaces`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.includedResources`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.excludedResources`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.labelSelector`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  ...selectorRows(`${HOOK}.labelSelector`),
  [`${HOOK}.postHooks`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec.container`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec.command`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec.onError`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec.execTimeout`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec.waitTimeout`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].exec.waitForReady`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].init`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].init.initContainers`]: by(RHOOKS_NODE, RHOOKS_UNIT),
  [`${HOOK}.postHooks[].init.timeout`]: by(RHOOKS_NODE, RHOOKS_UNIT),
};

const RESTORE_ROWS: Record<string, Row> = {
  'spec.backupName': by('test/controller/restore.test.ts'),
  // Resolved by validateRestore to the schedule's newest usable backup: proved below in this file.
  'spec.scheduleName': by('src/controller/specCoverage.test.ts'),
  'spec.includedNamespaces': by('test/restore/restore.test.ts', 'src/restore/plan.test.ts'),
  'spec.excludedNamespaces': by('test/restore/restore.test.ts'),
  'spec.includedResources': by('test/restore/restore.test.ts', 'src/restore/plan.test.ts'),
  'spec.excludedResources': by('test/restore/restore.test.ts', 'src/restore/plan.test.ts'),
  'spec.includeClusterResources': by('src/restore/plan.test.ts'),
  'spec.labelSelector': by('test/restore/restore.test.ts', 'src/restore/plan.test.ts'),
  ...selectorRows('spec.labelSelector'),
  'spec.orLabelSelectors': by('src/restore/plan.test.ts'),
  ...selectorRows('spec.orLabelSelectors[]'),
  'spec.namespaceMapping': by('test/restore/restore.test.ts', 'test/controller/restore.test.ts'),
  'spec.existingResourcePolicy': by('test/restore/restore.test.ts'),
  'spec.restoreStatus': by('test/restore/restore.test.ts', 'src/restore/transform.test.ts'),
  'spec.restoreStatus.includedResources': by('test/restore/restore.test.ts'),
  // Proved below in this file (the restore request's status filter).
  'spec.restoreStatus.excludedResources': by('src/controller/specCoverage.test.ts'),
  'spec.preserveNodePorts': by('src/restore/actions/actions.test.ts'),
  'spec.dryRun': by('test/restore/restore.test.ts', 'test/controller/restore.test.ts'),
  'spec.cancel': by('test/controller/cancel.test.ts', 'src/webhook/admission.test.ts'),
  ...SELECTION_ROWS,
  ...RESTORE_HOOK_ROWS,
  'spec.restorePVs': by(VOLUMES_SUITE, 'src/restore/actions/csi.test.ts'),
  'spec.itemOperationTimeout': refused,
  'spec.resourceModifier': by('test/controller/transforms.test.ts', 'src/selection/specErrors.test.ts'),
  'spec.resourceModifier.apiGroup': by('src/selection/specErrors.test.ts'),
  'spec.resourceModifier.kind': by('test/controller/transforms.test.ts', 'src/selection/specErrors.test.ts'),
  'spec.resourceModifier.name': by('test/controller/transforms.test.ts', 'src/selection/specErrors.test.ts'),
  'spec.uploaderConfig': refused,
};

const SCHEDULE_ROWS: Record<string, Row> = {
  'spec.schedule': by('src/schedule/plan.test.ts', 'test/lifecycle/schedule.test.ts'),
  // The template is the Backup spec, copied whole into each Backup (proved below): each of its
  // fields is honoured or refused exactly as the Backup's is.
  'spec.template': by('src/schedule/plan.test.ts', 'test/lifecycle/schedule.test.ts'),
  // But cancel: the template does not declare it (a backup is not created canceled), so there it
  // is an unknown field, refused by name (proved below).
  ...Object.fromEntries(Object.entries(BACKUP_ROWS).filter(([p]) => p !== 'spec.cancel').map(([p, row]) => [p.replace(/^spec\./, 'spec.template.'), row])),
  'spec.paused': by('src/schedule/plan.test.ts', 'test/lifecycle/schedule.test.ts'),
  'spec.skipImmediately': by('src/schedule/plan.test.ts', 'test/lifecycle/schedule.test.ts'),
  'spec.useOwnerReferencesInBackup': by('src/schedule/plan.test.ts'),
  'spec.keepLast': by('src/schedule/retention.test.ts', 'src/schedule/gc.test.ts'),
  'spec.keepHourly': by('src/schedule/retention.test.ts'),
  'spec.keepDaily': by('src/schedule/retention.test.ts', 'test/lifecycle/retention.test.ts'),
  'spec.keepWeekly': by('src/schedule/retention.test.ts', 'test/lifecycle/retention.test.ts'),
  'spec.keepMonthly': by('src/schedule/retention.test.ts', 'test/lifecycle/retention.test.ts'),
};

/** Every field path the schema declares: `spec.a.b`, `spec.list[].field`. Map keys and free-form objects are values, not fields. */
function fieldPaths(schema: Schema, at: string, out: Map<string, Schema>): Map<string, Schema> {
  switch (schema.kind) {
    case 'named':
      return fieldPaths(schema.schema, at, out);
    case 'array':
      return fieldPaths(schema.items, `${at}[]`, out);
    case 'object':
      for (const [k, v] of Object.entries(schema.properties)) {
        out.set(`${at}.${k}`, v);
        fieldPaths(v, `${at}.${k}`, out);
      }
      return out;
    default:
      return out;
  }
}

function specSchema(kind: StowageKind): Schema {
  const def = KINDS.find((k) => k.kind === kind);
  if (def === undefined) throw new Error(`no kind ${kind}`);
  return def.spec;
}

/** A value that asks for something (not null, false or empty), of the field's type. */
function sampleValue(schema: Schema): unknown {
  switch (schema.kind) {
    case 'named':
      return sampleValue(schema.schema);
    case 'boolean':
      return true;
    case 'string':
      return schema.enum?.[0] ?? '10m';
    case 'integer':
      return 1;
    case 'array':
      return [sampleValue(schema.items)];
    case 'map':
      return { key: sampleValue(schema.values) };
    case 'unknown-object':
      return { resources: [{ name: 'sample' }] };
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, sampleValue(v)]));
  }
}

/** `spec.a[].b` set to `value` in a fresh object (arrays get one element); returns the spec and the concrete path. */
function specSetting(fieldPath: string, value: unknown): { spec: Record<string, unknown>; concrete: string } {
  const spec: Record<string, unknown> = {};
  const parts = fieldPath.replace(/^spec\./, '').split('.');
  let cur: Record<string, unknown> = spec;
  parts.forEach((part, i) => {
    const isList = part.endsWith('[]');
    const key = isList ? part.slice(0, -2) : part;
    if (i === parts.length - 1) cur[key] = value;
    else if (isList) {
      const el: Record<string, unknown> = {};
      cur[key] = [el];
      cur = el;
    } else {
      const next: Record<string, unknown> = {};
      cur[key] = next;
      cur = next;
    }
  });
  return { spec, concrete: fieldPath.replaceAll('[]', '[0]') };
}

// ---- a ControllerContext for validation: its informer caches, a location that is Available ----

const NS = 'stowage';
const NOW = new Date('2026-01-02T00:00:00Z');

function location(): BackupStorageLocation {
  const l = newBackupStorageLocation('default', NS, { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' }, default: true });
  l.metadata.generation = 1;
  l.status = { phase: 'Available', observedGeneration: 1, lastValidationTime: NOW.toISOString() };
  return l;
}

function completedBackup(name: string, started: string, labels?: Record<string, string>): Backup {
  const b = newBackup(name, NS, { storageLocation: 'default' }, labels);
  b.status = { phase: 'Completed', startTimestamp: started };
  return b;
}

function validationContext(objects: Partial<Record<StowageKind, KubeObject[]>>): ControllerContext {
  const informer = (kind: StowageKind): Informer<KubeObject> => {
    const items = objects[kind] ?? [];
    const keyOf = (o: KubeObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
    // Validation only reads the cache (get, list, keys); nothing here starts or watches.
    return { get: (key: string) => items.find((o) => keyOf(o) === key), list: () => [...items], keys: () => items.map(keyOf) } as unknown as Informer<KubeObject>;
  };
  // Validation reads namespace, config, clock and the informer caches, nothing else of the context.
  return { namespace: NS, config: { ...DEFAULT_CONFIG, namespace: NS }, clock: fixedClock(NOW), informer } as unknown as ControllerContext;
}

const ctx = validationContext({ BackupStorageLocation: [location()], Backup: [completedBackup('b', '2026-01-01T00:00:00Z')] });

function backupErrors(spec: Record<string, unknown>): string[] {
  const b = newBackup('x', NS, spec as BackupSpec);
  b.metadata.creationTimestamp = NOW.toISOString();
  return validateBackup(ctx, b).errors;
}
function restoreErrors(spec: Record<string, unknown>): string[] {
  const r = newRestore('r', NS, { backupName: 'b', ...spec } as RestoreSpec);
  r.metadata.creationTimestamp = NOW.toISOString();
  return validateRestore(ctx, r).errors;
}
function scheduleErrors(spec: Record<string, unknown>): string[] {
  const template = (spec.template ?? {}) as BackupSpec;
  return validateSchedule(newSchedule('nightly', NS, { schedule: '@daily', ...spec, template }));
}

const KINDS_UNDER_TEST = [
  { kind: 'Backup', rows: BACKUP_ROWS, errors: backupErrors },
  { kind: 'Restore', rows: RESTORE_ROWS, errors: restoreErrors },
  { kind: 'Schedule', rows: SCHEDULE_ROWS, errors: scheduleErrors },
] as const;

describe('every spec field is honoured (with a test) or refused at validation', () => {
  for (const { kind, rows, errors } of KINDS_UNDER_TEST) {
    const fields = fieldPaths(specSchema(kind), 'spec', new Map());

    it(`${kind}: the table covers every field of the schema, and nothing else`, () => {
      expect([...fields.keys()].filter((p) => rows[p] === undefined), 'fields with no entry: add each, honoured or refused').toEqual([]);
      expect(Object.keys(rows).filter((p) => !fields.has(p)), 'entries for fields the schema does not have').toEqual([]);
    });

    it(`${kind}: a valid spec passes validation (so the refusals below are the fields\u2019 own)`, () => {
      expect(errors({})).toEqual([]);
    });

    for (const [fieldPath, row] of Object.entries(rows)) {
      const schema = fields.get(fieldPath);
      if ('refused' in row) {
        it(`${kind} ${fieldPath}: refused, naming the field`, () => {
          expect(schema?.unsupported, `${fieldPath} is refused here but kinds.ts does not mark it unsupported`).toBeDefined();
          if (schema === undefined) return;
          const { spec, concrete } = specSetting(fieldPath, sampleValue(schema));
          const errs = errors(spec);
          expect(errs.filter((e) => e.startsWith(`${concrete}: `) && e.includes('not supported')), JSON.stringify(errs)).toHaveLength(1);
        });
      } else {
        it(`${kind} ${fieldPath}: honoured, by ${row.honouredBy.join(', ')}`, () => {
          expect(schema?.unsupported, `${fieldPath} is honoured here but kinds.ts marks it unsupported`).toBeUndefined();
          expect(row.honouredBy.length).toBeGreaterThan(0);
          const name = fieldPath.split('.').pop()?.replace('[]', '') ?? '';
          for (const file of row.honouredBy) {
            const abs = path.join(ROOT, file);
            expect(fs.existsSync(abs), `${file} does not exist`).toBe(true);
            expect(fs.readFileSync(abs, 'utf8').includes(name), `${file} does not mention ${name}`).toBe(true);
          }
        });
      }
    }
  }

  it('a Schedule copies its whole template into each Backup, so template fields mean what the Backup\'s do', () => {
    const template = Object.fromEntries(
      [...fieldPaths(specSchema('Backup'), 'spec', new Map())]
        .filter(([p, sch]) => /^spec\.[^.[]+$/.test(p) && sch.unsupported === undefined && p !== 'spec.cancel')
        .map(([p, sch]) => [p.slice('spec.'.length), sampleValue(sch)]),
    ) as BackupSpec;
    expect(Object.keys(template).length).toBeGreaterThan(10);
    const b = backupFromSchedule(newSchedule('nightly', NS, { schedule: '@daily', template }), 'nightly-20260102000000');
    expect(b.spec).toEqual(template);
    expect(b.metadata.labels?.[LABEL_SCHEDULE_NAME]).toBe('nightly');
  });

  it('a Schedule\'s template cannot ask for canceled backups: spec.template.cancel is an unknown field', () => {
    expect(scheduleErrors({ template: { cancel: true } })).toContainEqual(expect.stringMatching(/^spec\.template\.cancel: unknown field/));
    // A Backup's own cancel is valid (it is acted on by the controller, not refused).
    expect(backupErrors({ cancel: true })).toEqual([]);
    expect(restoreErrors({ cancel: true })).toEqual([]);
  });
});

describe('spec.scheduleName of a Restore', () => {
  it('restores the schedule\'s newest Completed backup by start time (not a newer PartiallyFailed or Failed one)', () => {
    const labels = { [LABEL_SCHEDULE_NAME]: 'nightly' };
    const failed = completedBackup('nightly-3', '2026-01-01T03:00:00Z', labels);
    failed.status = { ...failed.status, phase: 'Failed' };
    const partial = completedBackup('nightly-2', '2026-01-01T02:00:00Z', labels);
    partial.status = { ...partial.status, phase: 'PartiallyFailed' };
    const c = validationContext({
      BackupStorageLocation: [location()],
      // Listed newest-created first: the start time decides, not the order or the name.
      Backup: [completedBackup('nightly-0', '2026-01-01T00:30:00Z', labels), completedBackup('nightly-1', '2026-01-01T01:00:00Z', labels), partial, failed, completedBackup('other', '2026-01-01T04:00:00Z')],
    });
    const r: Restore = newRestore('r', NS, { scheduleName: 'nightly' });
    const v = validateRestore(c, r);
    expect(v.errors).toEqual([]);
    expect(v.backup?.metadata.name).toBe('nightly-1');
    const none = validateRestore(c, newRestore('r2', NS, { scheduleName: 'weekly' }));
    expect(none.errors).toEqual([`schedule "weekly" has no Completed backup in namespace ${NS}`]);
  });

  it('matches a schedule name over 63 characters on its shortened label value, and accepts the backup it recorded', () => {
    const schedule = `s${'x'.repeat(68)}y`;
    expect(schedule).toHaveLength(70);
    const ofSchedule = backupFromSchedule(newSchedule(schedule, NS, { schedule: '@daily', template: {} }), `${schedule}-20260101000000`);
    const label = ofSchedule.metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '';
    expect(label.length).toBeLessThanOrEqual(63);
    const picked = completedBackup('picked', '2026-01-01T02:00:00Z', { [LABEL_SCHEDULE_NAME]: label });
    const c = validationContext({
      BackupStorageLocation: [location()],
      Backup: [completedBackup('older', '2026-01-01T01:00:00Z', { [LABEL_SCHEDULE_NAME]: label }), picked, completedBackup('stranger', '2026-01-01T03:00:00Z')],
    });
    expect(validateRestore(c, newRestore('r', NS, { scheduleName: schedule })).backup?.metadata.name).toBe('picked');
    // Started restores carry both (the controller records its pick): still valid, and the pick holds.
    const recorded = validateRestore(c, newRestore('r', NS, { scheduleName: schedule, backupName: 'older' }));
    expect(recorded.errors).toEqual([]);
    expect(recorded.backup?.metadata.name).toBe('older');
    expect(validateRestore(c, newRestore('r', NS, { scheduleName: schedule, backupName: 'stranger' })).errors)
      .toEqual([`backup "stranger" is not a backup of schedule "${schedule}"; set either backupName or scheduleName`]);
  });
});

describe('spec.restoreStatus.excludedResources of a Restore', () => {
  it('keeps the status of the excluded resources out of what restoreStatus includes', () => {
    const backup = completedBackup('b', '2026-01-01T00:00:00Z');
    const req = newRestoreRequest(newRestore('r', NS, { backupName: 'b', restoreStatus: { includedResources: ['*'], excludedResources: ['secrets'] } }), backup);
    expect(req.restoreStatus?.shouldInclude('configmaps')).toBe(true);
    expect(req.restoreStatus?.shouldInclude('secrets')).toBe(false);
  });
});

describe('every list a spec may carry is capped at validation, for each kind', () => {
  const list = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  /** A spec whose `field` holds `n` valid entries. */
  const lists: Record<string, { cap: number; spec: (n: number) => Record<string, unknown> }> = {
    includedNamespaces: { cap: SPEC_LIST_CAPS.includedNamespaces, spec: (n) => ({ includedNamespaces: list(n, 'ns') }) },
    excludedNamespaces: { cap: SPEC_LIST_CAPS.excludedNamespaces, spec: (n) => ({ excludedNamespaces: list(n, 'ns') }) },
    includedResources: { cap: SPEC_LIST_CAPS.includedResources, spec: (n) => ({ includedResources: list(n, 'things') }) },
    excludedResources: { cap: SPEC_LIST_CAPS.excludedResources, spec: (n) => ({ excludedResources: list(n, 'things') }) },
    orLabelSelectors: { cap: SPEC_LIST_CAPS.orLabelSelectors, spec: (n) => ({ orLabelSelectors: list(n, 'app').map((v) => ({ matchLabels: { app: v } })) }) },
    includedNames: { cap: SPEC_LIST_CAPS.includedNames, spec: (n) => ({ includedNames: list(n, 'app') }) },
    excludedNames: { cap: SPEC_LIST_CAPS.excludedNames, spec: (n) => ({ excludedNames: list(n, 'app') }) },
    includedClusterScopedResources: { cap: SPEC_LIST_CAPS.includedClusterScopedResources, spec: (n) => ({ includedClusterScopedResources: list(n, 'things') }) },
    excludedClusterScopedResources: { cap: SPEC_LIST_CAPS.excludedClusterScopedResources, spec: (n) => ({ excludedClusterScopedResources: list(n, 'things') }) },
    includedNamespaceScopedResources: { cap: SPEC_LIST_CAPS.includedNamespaceScopedResources, spec: (n) => ({ includedNamespaceScopedResources: list(n, 'things') }) },
    excludedNamespaceScopedResources: { cap: SPEC_LIST_CAPS.excludedNamespaceScopedResources, spec: (n) => ({ excludedNamespaceScopedResources: list(n, 'things') }) },
  };
  const restoreLists: typeof lists = {
    ...lists,
    namespaceMapping: { cap: SPEC_LIST_CAPS.namespaceMapping, spec: (n) => ({ namespaceMapping: Object.fromEntries(list(n, 'ns').map((x) => [x, `${x}-copy`])) }) },
    'restoreStatus.includedResources': { cap: SPEC_LIST_CAPS.includedResources, spec: (n) => ({ restoreStatus: { includedResources: list(n, 'things') } }) },
    'restoreStatus.excludedResources': { cap: SPEC_LIST_CAPS.excludedResources, spec: (n) => ({ restoreStatus: { includedResources: ['*'], excludedResources: list(n, 'things') } }) },
  };
  const kinds = [
    { kind: 'Backup', lists, errors: backupErrors, prefix: '' },
    { kind: 'Restore', lists: restoreLists, errors: restoreErrors, prefix: '' },
    { kind: 'Schedule', lists, errors: (spec: Record<string, unknown>) => scheduleErrors({ template: spec }), prefix: 'spec.template: ' },
  ];
  for (const { kind, lists: fields, errors, prefix } of kinds) {
    for (const [field, { cap, spec }] of Object.entries(fields)) {
      it(`${kind} ${field}: ${cap} entries pass, ${cap + 1} fail naming the field, its length and the cap`, () => {
        expect(errors(spec(cap))).toEqual([]);
        const errs = errors(spec(cap + 1));
        expect(errs).toHaveLength(1);
        expect(errs[0]).toMatch(new RegExp(`^${prefix.replace('.', '\\.')}${field.replace('.', '\\.')} has ${cap + 1} entries, more than the ${cap} allowed; `));
      });
    }
  }
});
