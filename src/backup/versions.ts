// spec.includeAllGroupVersions (Velero: EnableAPIGroupVersions): once every LIST is done, each
// written item is also stored at every other version its resource is served at, under
// resources/<gr>/<version>/ (no classic copy). Only the names of written items are kept meanwhile,
// never the items; the other versions are read page by page like the first.
import { apiVersionOf, type ApiResource } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import { FatalBackupError, MAX_PER_NAMESPACE_LISTS, prefetched, stoppedMessage, type CollectContext } from './collect.js';
import { otherVersionsOf, recordOf, recordProblem, recordResourceError } from './request.js';

/** Stores the other versions of every written item. Problems go to the results; only fatal errors escape. */
export async function collectOtherVersions(ctx: CollectContext): Promise<void> {
  const { req } = ctx;
  for (const [gr, names] of req.writtenNames ?? []) {
    const res = ctx.byGroupResource.get(gr);
    if (res === undefined || names.size === 0) continue;
    for (const version of otherVersionsOf(req, res)) await storeVersion(ctx, res, version, names);
  }
}

async function storeVersion(ctx: CollectContext, res: ApiResource, version: string, names: ReadonlySet<string>): Promise<void> {
  const { req } = ctx;
  const ref = { ...res, version, apiVersion: apiVersionOf({ group: res.group, version }) };
  // One LIST per namespace when the backup names a few namespaces, else one cluster-wide LIST; a
  // resource the requester may list only in some namespaces is listed in each (cluster-wide is refused).
  const access = ctx.rights?.access.get(res.groupResource);
  const restricted = res.namespaced && access !== undefined && !access.everywhere;
  const literal = req.namespaces.literalIncludes();
  const namespaces = res.namespaced && (literal !== undefined || restricted) ? [...new Set([...names].map((n) => n.slice(0, n.indexOf('/'))))] : [];
  const scopes: (string | undefined)[] = restricted || (namespaces.length > 0 && namespaces.length <= MAX_PER_NAMESPACE_LISTS) ? namespaces : [undefined];
  let stored = 0;
  try {
    for (const namespace of scopes) {
      for await (const page of prefetched(ctx.client.listPages(ref, { namespace, pageSize: ctx.pageSize, signal: ctx.signal }))) {
        for (const o of page.items) {
          const name = o.metadata?.name ?? '';
          const ns = res.namespaced ? (o.metadata?.namespace ?? '') : '';
          if (!names.has(ns === '' ? name : `${ns}/${name}`)) continue;
          try {
            await ctx.writer.addVersionCopy({ groupResource: res.groupResource, namespace: ns, name }, { ...o, apiVersion: o.apiVersion ?? ref.apiVersion });
          } catch (err) {
            throw new FatalBackupError(`writing the tarball failed: ${errorMessage(err)}`, { cause: err });
          }
          stored++;
        }
      }
    }
  } catch (err) {
    if (err instanceof FatalBackupError) throw err;
    if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
    const why = `includeAllGroupVersions: listing ${res.groupResource} at ${ref.apiVersion} failed, so its items are not stored at that version: ${errorMessage(err)}`;
    recordResourceError(req, res, why);
    ctx.log.error(recordProblem(req, 'errors', '', why), { resource: res.groupResource });
    return;
  }
  if (stored === names.size) {
    (recordOf(req, res).otherVersions ??= []).push(ref.apiVersion);
    ctx.log.info(`stored ${stored} ${res.groupResource} also at ${ref.apiVersion}`, { resource: res.groupResource, count: stored });
    return;
  }
  // Deleted (or relabelled out of the list) between the two LISTs: the copies that exist are kept.
  const msg = `includeAllGroupVersions: ${names.size - stored} of ${names.size} ${res.groupResource} backed up at ${res.apiVersion} were gone when listed at ${ref.apiVersion}; ${stored} stored at that version`;
  ctx.log.warn(recordProblem(req, 'warnings', '', msg), { resource: res.groupResource });
}
