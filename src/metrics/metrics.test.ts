import { describe, expect, it } from 'vitest';
import { createMetrics, initScheduleMetrics, recordBackupOutcome, recordRestoreOutcome, setLocationAvailable } from './metrics.js';

async function value(m: ReturnType<typeof createMetrics>, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const metric = m.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const data = await metric.get();
  const found = data.values.find(
    (v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l) && Object.keys(v.labels).length === Object.keys(labels).length,
  );
  return found?.value;
}

describe('createMetrics', () => {
  it('registers the Velero-equivalent metrics under stowage_ in its own registry', async () => {
    const a = createMetrics({ defaultMetrics: false });
    const b = createMetrics({ defaultMetrics: false });
    a.backupAttemptTotal.inc({ schedule: '' });
    expect(await value(a, 'stowage_backup_attempt_total', { schedule: '' })).toBe(1);
    expect(await value(b, 'stowage_backup_attempt_total', { schedule: '' })).toBeUndefined();

    const names = (await a.registry.getMetricsAsJSON()).map((m) => m.name).sort();
    expect(names).toEqual(
      [
        'backup_attempt_total',
        'backup_canceled_total',
        'backup_duration_seconds',
        'backup_failure_total',
        'backup_items_total',
        'backup_last_successful_timestamp',
        'backup_partial_failure_total',
        'backup_storage_location_available',
        'backup_success_total',
        'backup_tarball_size_bytes',
        'backup_total',
        'backup_validation_failure_total',
        'plugin_restarts_total',
        'restore_attempt_total',
        'restore_canceled_total',
        'restore_duration_seconds',
        'restore_failed_total',
        'restore_partial_failure_total',
        'restore_success_total',
        'restore_total',
        'restore_validation_failed_total',
      ]
        .map((n) => `stowage_${n}`)
        .sort(),
    );
  });

  it('adds process metrics by default', async () => {
    const m = createMetrics();
    const text = await m.registry.metrics();
    expect(text).toContain('process_resident_memory_bytes');
  });

  it('records backup outcomes by phase', async () => {
    const m = createMetrics({ defaultMetrics: false });
    const at = new Date('2025-01-02T03:04:05Z');
    recordBackupOutcome(m, { schedule: 'daily', phase: 'Completed', durationSeconds: 42, tarballBytes: 1234, items: 17, finishedAt: at });
    recordBackupOutcome(m, { schedule: 'daily', phase: 'PartiallyFailed' });
    recordBackupOutcome(m, { schedule: 'daily', phase: 'Failed' });
    recordBackupOutcome(m, { schedule: '', phase: 'FailedValidation' });
    recordBackupOutcome(m, { schedule: 'daily', phase: 'Canceled' });
    const l = { schedule: 'daily' };
    expect(await value(m, 'stowage_backup_canceled_total', l)).toBe(1);
    expect(await value(m, 'stowage_backup_success_total', l)).toBe(1);
    expect(await value(m, 'stowage_backup_partial_failure_total', l)).toBe(1);
    expect(await value(m, 'stowage_backup_failure_total', l)).toBe(1);
    expect(await value(m, 'stowage_backup_validation_failure_total', { schedule: '' })).toBe(1);
    expect(await value(m, 'stowage_backup_last_successful_timestamp', l)).toBe(at.getTime() / 1000);
    expect(await value(m, 'stowage_backup_tarball_size_bytes', l)).toBe(1234);
    expect(await value(m, 'stowage_backup_items_total', l)).toBe(17);
    const text = await m.registry.metrics();
    expect(text).toContain('stowage_backup_duration_seconds_sum{schedule="daily"} 42');
    expect(text).toContain('stowage_backup_duration_seconds_bucket{le="60",schedule="daily"} 1');
  });

  it('records restore outcomes by phase', async () => {
    const m = createMetrics({ defaultMetrics: false });
    for (const phase of ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation', 'Canceled'] as const)
      recordRestoreOutcome(m, { schedule: '', phase, durationSeconds: 1 });
    for (const n of ['success', 'partial_failure', 'failed', 'validation_failed', 'canceled'])
      expect(await value(m, `stowage_restore_${n}_total`, { schedule: '' })).toBe(1);
    expect(await m.registry.metrics()).toContain('stowage_restore_duration_seconds_count{schedule=""} 5');
  });

  it('initialises a schedule at zero, tracks locations and plugin restarts', async () => {
    const m = createMetrics({ defaultMetrics: false });
    initScheduleMetrics(m, 'nightly');
    expect(await value(m, 'stowage_backup_attempt_total', { schedule: 'nightly' })).toBe(0);
    expect(await value(m, 'stowage_restore_failed_total', { schedule: 'nightly' })).toBe(0);
    setLocationAvailable(m, 'default', true);
    setLocationAvailable(m, 'offsite', false);
    expect(await value(m, 'stowage_backup_storage_location_available', { location: 'default' })).toBe(1);
    expect(await value(m, 'stowage_backup_storage_location_available', { location: 'offsite' })).toBe(0);
    m.pluginRestartsTotal.inc({ plugin: 'stowage.dev/aws' });
    expect(await value(m, 'stowage_plugin_restarts_total', { plugin: 'stowage.dev/aws' })).toBe(1);
    m.backupTotal.set(5);
    expect(await value(m, 'stowage_backup_total')).toBe(5);
  });
});
