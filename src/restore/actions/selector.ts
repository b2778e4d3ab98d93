// Which items a restore item action applies to: its ResourceSelector, resolved once per run.
import type { ResourceSelector, RestoreItemAction } from '../../plugin/api/index.js';
import { namespaceFilter, resourceFilter, type ResourceLike } from '../../selection/filters.js';
import { labelSelectorMatches, parseLabelSelector, type LabelSelector } from '../../selection/labels.js';

/** A restore item action with its selector asked for once (plugins answer appliesTo over gRPC). */
export interface ResolvedRestoreItemAction {
  /** Plugin name (`domain/name`); built-ins are `stowage.dev/...`. */
  name: string;
  action: RestoreItemAction;
  selector: ResourceSelector;
}

export interface ActionMatcher {
  name: string;
  action: RestoreItemAction;
  applies(item: { resource: ResourceLike; namespace: string; labels: Record<string, string> | undefined }): boolean;
}

export function selectorFor(resources: string[]): ResourceSelector {
  return { includedNamespaces: [], excludedNamespaces: [], includedResources: resources, excludedResources: [], labelSelector: '' };
}

/** Asks each action for its selector once. A failing appliesTo names the action. */
export async function resolveRestoreItemActions(
  actions: readonly { name: string; action: RestoreItemAction }[],
): Promise<ResolvedRestoreItemAction[]> {
  return Promise.all(
    actions.map(async ({ name, action }) => {
      try {
        return { name, action, selector: await action.appliesTo() };
      } catch (err) {
        throw new Error(`restore item action ${name}: appliesTo failed: ${(err as Error).message}`, { cause: err });
      }
    }),
  );
}

/** Compiles a selector into a predicate. Throws when its label selector does not parse. */
export function actionMatcher(a: ResolvedRestoreItemAction): ActionMatcher {
  const s = a.selector;
  const ns = namespaceFilter(s.includedNamespaces, s.excludedNamespaces);
  const res = resourceFilter(s.includedResources, s.excludedResources);
  let labels: LabelSelector | undefined;
  try {
    labels = s.labelSelector.trim() === '' ? undefined : parseLabelSelector(s.labelSelector);
  } catch (err) {
    throw new Error(`restore item action ${a.name}: ${(err as Error).message}`, { cause: err });
  }
  const nsIncludesAll = s.includedNamespaces.length === 0 || s.includedNamespaces.includes('*');
  return {
    name: a.name,
    action: a.action,
    applies: (it) =>
      res.shouldInclude(it.resource) &&
      (it.namespace === '' ? nsIncludesAll : ns.shouldInclude(it.namespace)) &&
      labelSelectorMatches(labels, it.labels),
  };
}
