// Validates every BackupStorageLocation through its object-store plugin each validationFrequency
// and records Available/Unavailable (with a scrubbed message) in status, events and metrics.
import type { BackupStorageLocation, BackupStorageLocationLayout } from '../apis/v1/index.js';
import { isNotFound } from '../kube/index.js';
import { setLocationAvailable } from '../metrics/index.js';
import { removeCredentialFiles } from '../plugin/host/index.js';
import { splitKey, type Result } from '../runtime/index.js';

import { safeErrorMessage } from '../util/errors.js';
import type { ControllerContext, ControllerDefinition } from './run/context.js';
import { checkLocationKeys, encrypts } from '../storage/keys.js';
import { checkLocationSigning, signs } from '../storage/signatures.js';
import { BSL_RESOURCE, periodOr, validatedCurrentSpec } from './run/locations.js';
import { backupStoreOn, withBackupStore } from '../storage/open.js';
import { detectLayout, type DetectedLayout } from '../persistence/veleroStore.js';
import { flushSpool, stamp } from './run/runs.js';

function frequencyMs(ctx: ControllerContext, bsl: BackupStorageLocation): number {
  return periodOr(bsl.spec.validationFrequency, 'validationFrequency', ctx.config.storeValidationFrequency);
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

/** What is wrong with spec.signing as written, or undefined: a signing key, or an explicit opt-out, not both and not neither. */
export function signingSpecProblem(bsl: BackupStorageLocation): string | undefined {
  const g = bsl.spec.signing;
  if (g === undefined || g === null) return undefined;
  const keyed = g.keySecretRef !== undefined;
  if (keyed && g.disabled === true) return 'spec.signing sets both keySecretRef and disabled: true: sign with the key, or opt out, not both';
  if (!keyed && g.disabled !== true) return 'spec.signing needs keySecretRef (the Secret entry of the signing key), or disabled: true to opt out of signing';
  return undefined;
}

/**
 * Why a location in `layout` cannot be used for want of spec.signing, or undefined. A Stowage
 * location signs its backups unless it opts out explicitly; one with no spec.signing at all (made
 * before signing was the default) is refused rather than run unsigned without anyone choosing so.
 * Velero's layout is exempt: Velero's backups carry no Stowage signature.
 */
export function missingSigningProblem(bsl: BackupStorageLocation, layout: BackupStorageLocationLayout, namespace: string): string | undefined {
  if (layout === 'Velero' || (bsl.spec.signing !== undefined && bsl.spec.signing !== null)) return undefined;
  const readOnly = bsl.spec.accessMode === 'ReadOnly';
  const key = readOnly
    ? 'holding the key its backups were signed with (a copy of the Secret of the cluster that wrote them)'
    : `holding the signing key (a new one: kubectl -n ${namespace} create secret generic ${bsl.metadata.name}-signing --from-literal=hmac="$(openssl rand -base64 48)", key hmac)`;
  return 'spec.signing is missing, and a Stowage location signs its backups unless told otherwise: ' +
    `set spec.signing.keySecretRef to an entry of a Secret in namespace ${namespace} ${key}, ` +
    'or spec.signing.disabled: true to opt out (its backups are then not tamper-evident; a location made before signing was the default ' +
    'keeps its unsigned backups restorable this way, docs/install.md "Upgrading")';
}

/** How a Stowage location that opted out of signing is named in the server log, or undefined when it signs. */
export function unsignedNote(bsl: BackupStorageLocation): string | undefined {
  if (bsl.spec.signing?.disabled !== true) return undefined;
  return 'it is unsigned by choice (spec.signing.disabled: true): its backups are not tamper-evident';
}

/** What one validation found: the phase, and whose layout the bucket holds when that could be told. */
export interface LocationValidation {
  available: boolean;
  message: string;
  /** `detectedIn`: where it was detected (recorded in status), absent when spec.velero decides. */
  layout?: DetectedLayout & { detectedIn?: string };
}

/** `bucket/prefix`: where a location's layout was detected (status.layoutDetectedIn). */
function detectionPlace(bsl: BackupStorageLocation): string {
  return `${bsl.spec.objectStorage.bucket}/${bsl.spec.objectStorage.prefix ?? ''}`;
}

/**
 * The layout detected at the location's first validation, while it still points at the same bucket
 * and prefix. Detection runs once: anyone who may put objects into the bucket could otherwise
 * switch a Stowage location to Velero's layout (planting velero-backup.json folders), and with it
 * which backups sync keeps and whether restores need a manifest.
 */
function recordedLayout(bsl: BackupStorageLocation): (DetectedLayout & { detectedIn: string }) | undefined {
  const st = bsl.status;
  const place = detectionPlace(bsl);
  if (st?.layout === undefined || st.layoutDetectedIn !== place) return undefined;
  return { layout: st.layout, reason: st.layoutReason ?? 'detected at the first validation', detectedIn: place };
}

/** Validates one location now; resolves to the phase and message it recorded. */
export async function validateLocation(ctx: ControllerContext, bsl: BackupStorageLocation): Promise<LocationValidation> {
  const name = bsl.metadata.name;
  const unsupported = encryptionSpecProblem(bsl) ?? signingSpecProblem(bsl);
  if (unsupported !== undefined) return { available: false, message: unsupported };
  let layout: LocationValidation['layout'];
  try {
    return await withBackupStore(ctx, bsl, { kind: 'controller', namespace: ctx.namespace, name: `backupstoragelocation/${name}` }, async ({ handle, objectStore }) => {
      const v = bsl.spec.velero;
      layout = v === true || v === false
        ? { layout: v ? 'Velero' : 'Stowage', reason: `spec.velero is ${String(v)}` }
        : recordedLayout(bsl) ?? { ...(await detectLayout({ objectStore, bucket: bsl.spec.objectStorage.bucket, prefix: bsl.spec.objectStorage.prefix ?? '' })), detectedIn: detectionPlace(bsl) };
      const problem = layoutProblem(bsl, layout.layout, ctx.namespace, layout.reason);
      if (problem !== undefined) return { available: false, layout, message: problem };
      // The layout found (not the one the location recorded before) decides which store validates.
      await backupStoreOn(objectStore, bsl, layout.layout === 'Velero').validate();
      await checkLocationKeys(ctx, handle, bsl);
      await checkLocationSigning(ctx, bsl);
      return { available: true, message: '', layout };
    });
  } catch (err) {
    return { available: false, message: safeErrorMessage(err), ...(layout !== undefined ? { layout } : {}) };
  }
}

/** Why the layout found cannot carry the location's encryption or signing (or lacks the signing it must have), or undefined. */
function layoutProblem(bsl: BackupStorageLocation, layout: BackupStorageLocationLayout, namespace: string, reason: string): string | undefined {
  if (layout === 'Velero' && encrypts(bsl)) {
    return `the bucket holds Velero's backups (${reason}), which Stowage only reads and never encrypts: remove spec.encryption, or set spec.velero: false`;
  }
  if (layout === 'Velero' && signs(bsl)) {
    return `the bucket holds Velero's backups (${reason}), which carry no Stowage signature: remove spec.signing, or set spec.velero: false`;
  }
  return missingSigningProblem(bsl, layout, namespace);
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
        // An edited spec may have turned signing off: the log names that even when the phase stays.
        const specEdited = bsl.status?.observedGeneration !== bsl.metadata.generation;
        try {
          await ctx.client.patchStatus(BSL_RESOURCE, bsl.metadata.namespace, bsl.metadata.name, {
            status: {
              phase, message: available ? null : message, lastValidationTime: stamp(ctx.clock.now()),
              ...(layout !== undefined ? { layout: layout.layout, layoutReason: layout.reason, layoutDetectedIn: layout.detectedIn ?? null } : {}),
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
        // Velero's backups carry no Stowage signature: signing does not apply there.
        const unsigned = available && layout?.layout !== 'Velero' ? unsignedNote(bsl) : undefined;
        if (changed) {
          const velero = layout?.layout === 'Velero' ? ` (Velero's layout, read only: ${layout.reason})` : '';
          ctx.logger.log(available ? 'info' : 'warn', `backup storage location ${bsl.metadata.name} is ${phase}${velero}${available ? '' : `: ${message}`}`, { location: bsl.metadata.name });
          // kubectl describe shows the opt-out too, beside the validation.
          const note = available ? `location validated${unsigned !== undefined ? `; ${unsigned}` : ''}` : message;
          void ctx.events.event(bsl, available ? 'Normal' : 'Warning', phase, note);
        }
        if (unsigned !== undefined && (changed || specEdited)) ctx.logger.warn(`backup storage location ${bsl.metadata.name}: ${unsigned}`, { location: bsl.metadata.name });
        return every > 0 ? { requeueAfter: every } : undefined;
      },
    },
  };
}

