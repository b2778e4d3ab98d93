// Whether a request's requester may use a backup (DownloadRequests and DeleteBackupRequests): the
// rule is auth/backupAccess.ts, on the resource list the backup stored in its location. A backup
// with no resource list there (still running, or failed before writing one) names nothing to check
// against, so until it has one only the user who made it may use it.
import type { Backup } from '../../apis/v1/index.js';
import { backupUseRefusal, describeRequester, requesterOf, sameRequester, type Authority, type HeldResources } from '../../auth/index.js';
import { safeErrorMessage } from '../../util/errors.js';
import type { ControllerContext } from './context.js';
import { resolveLocation } from './locations.js';
import { readStoredResourceList } from '../../storage/open.js';

/** The backup's stored resource list, or undefined when its location holds none. */
async function heldBy(ctx: ControllerContext, backup: Backup, purpose: string): Promise<HeldResources | undefined> {
  const bsl = resolveLocation(ctx, backup.spec.storageLocation);
  if (bsl === undefined) return undefined;
  try {
    return await readStoredResourceList(ctx, bsl, backup, { kind: 'controller', namespace: ctx.namespace, name: purpose });
  } catch (err) {
    throw new Error(`reading the resource list of backup "${backup.metadata.name}" from location "${bsl.metadata.name}" to check the requester's rights failed: ${safeErrorMessage(err)}`, { cause: err });
  }
}

/**
 * Why `authority` may not `action` (`download backup "b1"`, `delete backup "b1"`), or undefined.
 * `holder` is how the message names the backup after the colon (`it`, `its backup "b1"`).
 * Cluster-admin mode allows everything, as before requester rights existed.
 */
export async function backupRefusal(
  ctx: ControllerContext, authority: Authority, backup: Backup, action: string, holder: string, purpose: string,
): Promise<string | undefined> {
  if (authority.mode === 'cluster-admin') return undefined;
  const held = await heldBy(ctx, backup, purpose);
  if (held !== undefined) return backupUseRefusal(authority.reviewer, held, action, holder);
  const maker = requesterOf(backup);
  if (maker !== undefined && !('error' in maker) && sameRequester(maker, authority.requester)) return undefined;
  const who = authority.requester.username;
  const subject = holder === 'it' ? `backup "${backup.metadata.name}"` : holder;
  const only = maker !== undefined && !('error' in maker) ? `only its requester, ${describeRequester(maker)}, may` : 'nobody but the server may, as it records no requester';
  return `${who} may not ${action}: ${subject} has no resource list in its location yet (it is still running, or failed before writing one), so there is nothing to check ${who}'s rights against, and ${only}`;
}
