// Prometheus metrics, Velero-equivalent names under the stowage_ prefix. No global registry:
// each createMetrics() call owns its registry, so tests can make as many as they like.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface StowageMetrics {
  registry: Registry;
  backupTotal: Gauge;
  backupAttemptTotal: Counter<'schedule'>;
  backupSuccessTotal: Counter<'schedule'>;
  backupPartialFailureTotal: Counter<'schedule'>;
  backupFailureTotal: Counter<'schedule'>;
  backupValidationFailureTotal: Counter<'schedule'>;
  backupCanceledTotal: Counter<'schedule'>;
  backupDurationSeconds: Histogram<'schedule'>;
  backupTarballSizeBytes: Gauge<'schedule'>;
  backupItemsTotal: Gauge<'schedule'>;
  backupLastSuccessfulTimestamp: Gauge<'schedule'>;
  restoreTotal: Gauge;
  restoreAttemptTotal: Counter<'schedule'>;
  restoreSuccessTotal: Counter<'schedule'>;
  restorePartialFailureTotal: Counter<'schedule'>;
  restoreFailedTotal: Counter<'schedule'>;
  restoreValidationFailedTotal: Counter<'schedule'>;
  restoreCanceledTotal: Counter<'schedule'>;
  restoreDurationSeconds: Histogram<'schedule'>;
  pluginRestartsTotal: Counter<'plugin'>;
  backupStorageLocationAvailable: Gauge<'location'>;
  /**
   * Registers stowage_webhook_certificate_expiry_seconds, read from `source` (the served
   * certificate's notAfter, ms since the epoch) at each scrape. A server without the webhook never
   * calls it, so it exports no such series rather than a misleading 0.
   */
  setWebhookCertificateExpiry(source: () => number, now?: () => number): void;
  /**
   * Registers stowage_webhook_configuration_ok and sets it: 1 while the admission webhook is in
   * effect for the server's namespace, 0 while runs are held for it. Only servers with the webhook.
   */
  setWebhookConfigurationOk(ok: boolean): void;
}

export interface CreateMetricsOptions {
  /** Also export process_* / nodejs_* metrics (memory, CPU, event loop). Default true. */
  defaultMetrics?: boolean;
}

export const METRIC_PREFIX = 'stowage_';

// Seconds: from quick namespace backups up to multi-hour cluster-wide runs.
const DURATION_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];

export function createMetrics(opts: CreateMetricsOptions = {}): StowageMetrics {
  const registry = new Registry();
  const registers = [registry];
  const p = METRIC_PREFIX;
  const bySchedule = ['schedule'] as const;
  const counter = (name: string, help: string): Counter<'schedule'> =>
    new Counter({ name: p + name, help, labelNames: bySchedule, registers });
  const gauge = (name: string, help: string): Gauge<'schedule'> =>
    new Gauge({ name: p + name, help, labelNames: bySchedule, registers });
  let configurationOk: Gauge | undefined;
  const m: StowageMetrics = {
    registry,
    backupTotal: new Gauge({ name: `${p}backup_total`, help: 'Current number of existing backups', registers }),
    backupAttemptTotal: counter('backup_attempt_total', 'Total number of attempted backups'),
    backupSuccessTotal: counter('backup_success_total', 'Total number of successful backups'),
    backupPartialFailureTotal: counter('backup_partial_failure_total', 'Total number of partially failed backups'),
    backupFailureTotal: counter('backup_failure_total', 'Total number of failed backups'),
    backupValidationFailureTotal: counter('backup_validation_failure_total', 'Total number of backups that failed validation'),
    backupCanceledTotal: counter('backup_canceled_total', 'Total number of canceled backups (spec.cancel)'),
    backupDurationSeconds: new Histogram({
      name: `${p}backup_duration_seconds`,
      help: 'Time taken to complete a backup, in seconds',
      labelNames: bySchedule,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    backupTarballSizeBytes: gauge('backup_tarball_size_bytes', 'Size, in bytes, of the last backup tarball'),
    backupItemsTotal: gauge('backup_items_total', 'Total number of items backed up by the last backup'),
    backupLastSuccessfulTimestamp: gauge(
      'backup_last_successful_timestamp',
      'Unix time, in seconds, of the last successful backup',
    ),
    restoreTotal: new Gauge({ name: `${p}restore_total`, help: 'Current number of existing restores', registers }),
    restoreAttemptTotal: counter('restore_attempt_total', 'Total number of attempted restores'),
    restoreSuccessTotal: counter('restore_success_total', 'Total number of successful restores'),
    restorePartialFailureTotal: counter('restore_partial_failure_total', 'Total number of partially failed restores'),
    restoreFailedTotal: counter('restore_failed_total', 'Total number of failed restores'),
    restoreValidationFailedTotal: counter('restore_validation_failed_total', 'Total number of restores that failed validation'),
    restoreCanceledTotal: counter('restore_canceled_total', 'Total number of canceled restores (spec.cancel)'),
    restoreDurationSeconds: new Histogram({
      name: `${p}restore_duration_seconds`,
      help: 'Time taken to complete a restore, in seconds',
      labelNames: bySchedule,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    pluginRestartsTotal: new Counter({
      name: `${p}plugin_restarts_total`,
      help: 'Total number of plugin process restarts',
      labelNames: ['plugin'] as const,
      registers,
    }),
    backupStorageLocationAvailable: new Gauge({
      name: `${p}backup_storage_location_available`,
      help: 'Whether a backup storage location is available (1) or not (0)',
      labelNames: ['location'] as const,
      registers,
    }),
    setWebhookCertificateExpiry: (source, now = Date.now) => {
      // Computed at scrape time, so it counts down between renewal checks.
      new Gauge({
        name: `${p}webhook_certificate_expiry_seconds`,
        help: 'Seconds until the admission webhook certificate this replica serves expires (renewed once a third of its lifetime is left)',
        registers,
        collect() {
          this.set(Math.round((source() - now()) / 1000));
        },
      });
    },
    setWebhookConfigurationOk: (ok) => {
      configurationOk ??= new Gauge({
        name: `${p}webhook_configuration_ok`,
        help: 'Whether the admission webhook configuration exists, selects the server\'s namespace and points at this server (1), or not (0: no backup or restore starts)',
        registers,
      });
      configurationOk.set(ok ? 1 : 0);
    },
  };
  if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  return m;
}

/** Creates the per-schedule series at zero, so dashboards show a schedule before its first run. */
export function initScheduleMetrics(m: StowageMetrics, schedule: string): void {
  const l = { schedule };
  for (const c of [
    m.backupAttemptTotal,
    m.backupSuccessTotal,
    m.backupPartialFailureTotal,
    m.backupFailureTotal,
    m.backupValidationFailureTotal,
    m.backupCanceledTotal,
    m.restoreAttemptTotal,
    m.restoreSuccessTotal,
    m.restorePartialFailureTotal,
    m.restoreFailedTotal,
    m.restoreValidationFailedTotal,
    m.restoreCanceledTotal,
  ])
    c.inc(l, 0);
}

export type FinishedPhase = 'Completed' | 'PartiallyFailed' | 'Failed' | 'FailedValidation' | 'Canceled';

export interface BackupOutcome {
  /** Schedule name, '' for backups made by hand. */
  schedule: string;
  phase: FinishedPhase;
  durationSeconds?: number;
  tarballBytes?: number;
  items?: number;
  /** When the backup finished; default now. Sets the last-successful timestamp on success. */
  finishedAt?: Date;
}

/** Counts one finished backup under its phase and records its size, items and duration. */
export function recordBackupOutcome(m: StowageMetrics, o: BackupOutcome): void {
  const l = { schedule: o.schedule };
  switch (o.phase) {
    case 'Completed':
      m.backupSuccessTotal.inc(l);
      m.backupLastSuccessfulTimestamp.set(l, (o.finishedAt ?? new Date()).getTime() / 1000);
      break;
    case 'PartiallyFailed':
      m.backupPartialFailureTotal.inc(l);
      break;
    case 'Failed':
      m.backupFailureTotal.inc(l);
      break;
    case 'FailedValidation':
      m.backupValidationFailureTotal.inc(l);
      break;
    case 'Canceled':
      m.backupCanceledTotal.inc(l);
      break;
  }
  if (o.durationSeconds !== undefined) m.backupDurationSeconds.observe(l, o.durationSeconds);
  if (o.tarballBytes !== undefined) m.backupTarballSizeBytes.set(l, o.tarballBytes);
  if (o.items !== undefined) m.backupItemsTotal.set(l, o.items);
}

export interface RestoreOutcome {
  schedule: string;
  phase: FinishedPhase;
  durationSeconds?: number;
}

export function recordRestoreOutcome(m: StowageMetrics, o: RestoreOutcome): void {
  const l = { schedule: o.schedule };
  switch (o.phase) {
    case 'Completed':
      m.restoreSuccessTotal.inc(l);
      break;
    case 'PartiallyFailed':
      m.restorePartialFailureTotal.inc(l);
      break;
    case 'Failed':
      m.restoreFailedTotal.inc(l);
      break;
    case 'FailedValidation':
      m.restoreValidationFailedTotal.inc(l);
      break;
    case 'Canceled':
      m.restoreCanceledTotal.inc(l);
      break;
  }
  if (o.durationSeconds !== undefined) m.restoreDurationSeconds.observe(l, o.durationSeconds);
}

export function setLocationAvailable(m: StowageMetrics, location: string, available: boolean): void {
  m.backupStorageLocationAvailable.set({ location }, available ? 1 : 0);
}
