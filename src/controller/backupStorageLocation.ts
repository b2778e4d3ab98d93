// Validates every BackupStorageLocation through its object-store plugin each validationFrequency
// and records Available/Unavailable (with a scrubbed message) in status, events and metrics.
import type { BackupStorageLocation } from '../apis/v1/index.js';
import { isNotFound } from '../kube/index.js';
import { setLocationAvailable } from '../metrics/index.js';
import { removeCredentialFiles } from '../plugin/host/index.js';
import { splitKey, type Result } from '../runtime/index.js';

import { parseDuration } from '../util/duration.js';
import { safeErrorMessage } from '../util/errors.js';
import type { ControllerContext, ControllerDefinition } from './context.js';
import { checkLocationKeys, encrypts } from './keys.js';
import { checkLocationSigning, signs } from './signatures.js';
import { BSL_RESOURCE, backupStoreOn, openObjectStore, validatedCurrentSpec } from './locations.js';
import { detectLayout, type DetectedLayout } from '../persistence/veleroStore.js';
import { flushSpool, stamp } from './runs.js';

function frequencyMs(ctx: ControllerContext, bsl: BackupStorageLocation): number {
  const f = bsl.spec.validationFrequency;
  if (f === undefined || f === '') return ctx.config.storeValidationFrequency;
  try {
    return parseDuration(f, 'validationFrequency');
  } catch {
    return ctx.config.storeValidationFrequency;
  }
}

/** What is wrong with spec.encryption as written, or undefined. */
export function encryptionSpecProblem(bsl: BackupStorageLocation): string | undefined {
  const e = bsl.spec.encryption;
  if (e === undefined || e === null) return undefined;
  const bySecret = e.keySecretRef !== undefined;
  const byPlugin = e.keyManager !== undefined;
  if (bySecret && byPlugin) return 'spec.encryption sets both keySecretRef and keyManager: give one';
  if (!bySecret && !byPlugin) return 'spec.encryption needs keySecretRef (a Secret of key-encryption keys) or keyManager (a KeyManager plugin)';
  return undefined;
}

/** What one validation found: the phase, and whose layout the bucket holds when that could be told. */
export interface LocationValidation {
  available: boolean;
  message: string;
  layout?: DetectedLayout;
}

/** Validates one location now; resolves to the phase and message it recorded. */
export async function validateLocation(ctx: ControllerContext, bsl: BackupStorageLocation): Promise<LocationValidation> {
  const name = bsl.metadata.name;
  const unsupported = encryptionSpecProblem(bsl);
  if (unsupported !== undefined) return { available: false, message: unsupported };
  const handle = ctx.plugins.handle({ kind: 'controller', namespace: ctx.namespace, name: `backupstoragelocation/${name}` });
  let layout: DetectedLayout | undefined;
  try {
    const objectStore = await openObjectStore(ctx, handle, bsl);
    const v = bsl.spec.velero;
    layout = v === true || v === false
      ? { layout: v ? 'Velero' : 'Stowage', reason: `spec.velero is ${String(v)}` }
      : await detectLayout({ objectStore, bucket: bsl.spec.objectStorage.bucket, prefix: bsl.spec.objectStorage.prefix ?? '' });
    if (layout.layout === 'Velero' && encrypts(bsl)) {
      return { available: false, layout, message: `the bucket holds Velero's backups (${layout.reason}), which Stowage only reads and never encrypts: remove spec.encryption, or set spec.velero: false` };
    }
    if (layout.layout === 'Velero' && signs(bsl)) {
      return { available: false, layout, message: `the bucket holds Velero's backups (${layout.reason}), which carry no Stowage signature: remove spec.signing, or set spec.velero: false` };
    }
    await backupStoreOn(objectStore, bsl, layout.layout === 'Velero').validate();
    await checkLocationKeys(ctx, handle, bsl);
    await checkLocationSigning(ctx, bsl);
    return { available: true, message: '', layout };
  } catch (err) {
    return { available: false, message: safeErrorMessage(err), ...(layout !== undefined ? { layout } : {}) };
  } finally {
    handle.release();
  }
}

export function backupStorageLocationController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<BackupStorageLocation>('BackupStorageLocation');
  return {
    name: 'backup-storage-location',
    watches: [informer],
    workers: 2,
    reconciler: {
      async reconcile(key): Promise<Result> {
        const bsl = informer.get(key);
        if (bsl === undefined) {
          // Deleted: the copy of its credentials written for plugins goes with it.
          removeCredentialFiles(ctx.scratchDir, splitKey(key).name);
          return;
        }
        const every = frequencyMs(ctx, bsl);
        const last = bsl.status?.lastValidationTime;
        const now = ctx.clock.now().getTime();
        // Informer updates (our own status patches included) must not turn into a validation storm;
        // an edited spec (a new generation) is validated at once.
        if (last !== undefined && validatedCurrentSpec(bsl)) {
          if (every <= 0) return; // periodic validation off: once per spec
          const due = Date.parse(last) + every;
          if (due > now + 500) return { requeueAfter: due - now };
        }
        const { available, message, layout } = await validateLocation(ctx, bsl);
        const phase = available ? 'Available' : 'Unavailable';
        const changed = bsl.status?.phase !== phase || (bsl.status?.message ?? '') !== message || (layout !== undefined && bsl.status?.layout !== layout.layout);
        try {
          await ctx.client.patchStatus(BSL_RESOURCE, bsl.metadata.namespace, bsl.metadata.name, {
            status: {
              phase, message: available ? null : message, lastValidationTime: stamp(ctx.clock.now()),
              ...(layout !== undefined ? { layout: layout.layout, layoutReason: layout.reason } : {}),
              ...(bsl.metadata.generation !== undefined ? { observedGeneration: bsl.metadata.generation } : {}),
            },
          });
        } catch (err) {
          if (isNotFound(err)) return;
          throw err;
        }
        setLocationAvailable(ctx.metrics, bsl.metadata.name, available);
        // Logs that could not be uploaded while the location was down go up now.
        if (available) await flushSpool(ctx, bsl);
        if (changed) {
          const velero = layout?.layout === 'Velero' ? ` (Velero's layout, read only: ${layout.reason})` : '';
          ctx.logger.log(available ? 'info' : 'warn', `backup storage location ${bsl.metadata.name} is ${phase}${velero}${available ? '' : `: ${message}`}`, { location: bsl.metadata.name });
          void ctx.events.event(bsl, available ? 'Normal' : 'Warning', phase, available ? 'location validated' : message);
        }
        return every > 0 ? { requeueAfter: every } : undefined;
      },
    },
  };
}

