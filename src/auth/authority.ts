// The rights a run acts with. In `requester` trust mode (the default) that is the user the
// admission webhook recorded on the object: reads and writes go through a client impersonating
// them, and questions the API cannot answer by failing a request (may they list Secrets in
// team-b?) go to SubjectAccessReviews. In `cluster-admin` mode it is the server's own account.
import type { TrustMode } from '../config/index.js';
import type { DynamicClient, KubeObject } from '../kube/index.js';
import { createAccessReviewer, type AccessReviewer } from './access.js';
import { REQUESTER_ANNOTATION, describeRequester, requesterOf, type Requester } from './requester.js';
import { sealRefusal } from './seal.js';

export type Authority =
  | { mode: 'cluster-admin'; client: DynamicClient; requester: Requester | undefined; describe: string }
  | { mode: 'requester'; client: DynamicClient; requester: Requester; reviewer: AccessReviewer; describe: string };

/**
 * The authority for a run or request on `obj`, or why it has none: in requester mode an object
 * without a readable stamp is refused (the webhook did not see it: it is not installed, or the
 * object predates it), never run with the server's rights. A stamp counts only with a seal that
 * proves this server's webhook wrote it for this object (seal.ts), checked with `sealKey`.
 */
export function authorityFor(
  mode: TrustMode, serverClient: DynamicClient, obj: Pick<KubeObject, 'metadata' | 'kind'>, opts: { impersonateUid: boolean; sealKey: Buffer | undefined },
): Authority | { error: string } {
  const r = requesterOf(obj);
  if (mode === 'cluster-admin') {
    const requester = r !== undefined && !('error' in r) ? r : undefined;
    return { mode, client: serverClient, requester, describe: requester !== undefined ? `${describeRequester(requester)}, with the server's rights (trust mode cluster-admin)` : "the server's rights (trust mode cluster-admin)" };
  }
  if (r === undefined) {
    return { error: `it has no ${REQUESTER_ANNOTATION} annotation: the Stowage admission webhook did not record who created it (is the MutatingWebhookConfiguration installed?), and in trust mode "requester" nothing runs without knowing whose rights to use` };
  }
  if ('error' in r) return { error: `${r.error}; it cannot say whose rights to use` };
  const unsealed = sealRefusal(opts.sealKey, obj);
  if (unsealed !== undefined) return { error: unsealed };
  // Impersonate-Uid exists from Kubernetes 1.22; older API servers would ignore it (harmless) but
  // newer ones demand `impersonate uids` rights for it, so it is sent only where it means something.
  return {
    mode, requester: r, describe: describeRequester(r),
    client: serverClient.impersonating({ username: r.username, groups: r.groups, uid: opts.impersonateUid ? r.uid : '' }),
    reviewer: createAccessReviewer(serverClient, r),
  };
}
