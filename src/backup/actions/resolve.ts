// Item actions with their AppliesTo resolved once per run into a matcher.
import type { ApiResource } from '../../kube/index.js';
import type { BackupItemAction, KubeObject, ResourceIdentifier } from '../../plugin/api/index.js';
import { namespaceFilter, resourceFilter } from '../../selection/filters.js';
import { labelSelectorMatches, parseLabelSelector, type Labels } from '../../selection/labels.js';
import type { Dependency } from './dependency.js';

export interface NamedBackupItemAction {
  /** Plugin name (`stowage.dev/pod-pvcs`), used in log lines. */
  name: string;
  action: BackupItemAction;
  /** Built-in actions: why `item` needs `id`, one of the additional items it returned for it. */
  explain?: (item: KubeObject, id: ResourceIdentifier) => Dependency | undefined;
}

export interface ResolvedBackupItemAction extends NamedBackupItemAction {
  /** Whether Execute should be called for an item of `res` in `namespace` ('' if cluster-scoped) with `labels`. */
  matches(res: ApiResource, namespace: string, labels: Labels): boolean;
}

export async function resolveActions(actions: readonly NamedBackupItemAction[]): Promise<ResolvedBackupItemAction[]> {
  return Promise.all(
    actions.map(async (a) => {
      let sel;
      try {
        sel = await a.action.appliesTo();
      } catch (err) {
        throw new Error(`backup item action ${a.name}: AppliesTo failed: ${(err as Error).message}`, { cause: err });
      }
      const ns = namespaceFilter(sel.includedNamespaces, sel.excludedNamespaces);
      const rs = resourceFilter(sel.includedResources, sel.excludedResources);
      let labels;
      try {
        labels = sel.labelSelector === '' ? undefined : parseLabelSelector(sel.labelSelector);
      } catch (err) {
        throw new Error(`backup item action ${a.name}: AppliesTo returned an invalid label selector: ${(err as Error).message}`, { cause: err });
      }
      // Asked once per item of every page: the resource part is decided once per resource.
      const byResource = new Map<string, boolean>();
      return {
        ...a,
        matches(res: ApiResource, namespace: string, itemLabels: Labels): boolean {
          // A cluster-scoped item only matches an action that does not restrict namespaces.
          if (namespace === '' ? !ns.includesEverything() : !ns.shouldInclude(namespace)) return false;
          let resourceOk = byResource.get(res.groupResource);
          if (resourceOk === undefined) byResource.set(res.groupResource, (resourceOk = rs.shouldInclude(res)));
          return resourceOk && labelSelectorMatches(labels, itemLabels);
        },
      };
    }),
  );
}
