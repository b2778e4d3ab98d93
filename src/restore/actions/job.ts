// Jobs: the apiserver generates a Job's selector from the Job's uid (label controller-uid, and
// batch.kubernetes.io/controller-uid on newer clusters). The old uid's selector would be refused
// ("not auto-generated") or match nothing, so the uid labels go, and the apiserver generates anew.
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { dropIfEmpty, recordAt } from '../objects.js';
import { selectorFor } from './selector.js';

export const JOB_UID_LABELS = ['controller-uid', 'batch.kubernetes.io/controller-uid'];

function stripUidLabels(labels: Record<string, unknown> | undefined): void {
  if (labels === undefined) return;
  for (const k of JOB_UID_LABELS) delete labels[k];
}

export function restoreJob(item: KubeObject): KubeObject {
  const spec = recordAt(item, 'spec');
  if (spec === undefined) return item;
  const templateMeta = recordAt(recordAt(spec, 'template') ?? {}, 'metadata');
  if (templateMeta !== undefined) {
    stripUidLabels(recordAt(templateMeta, 'labels'));
    dropIfEmpty(templateMeta, 'labels');
  }
  const selector = recordAt(spec, 'selector');
  if (spec.manualSelector !== true) {
    // Without manualSelector the apiserver refuses any selector it did not generate itself.
    delete spec.selector;
    delete spec.manualSelector;
    return item;
  }
  if (selector !== undefined) {
    stripUidLabels(recordAt(selector, 'matchLabels'));
    dropIfEmpty(selector, 'matchLabels');
    dropIfEmpty(spec, 'selector');
  }
  // A manual selector that held nothing but the old uid: let the apiserver generate one.
  if (spec.selector === undefined) delete spec.manualSelector;
  return item;
}

export const jobAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['jobs.batch'])),
  execute: ({ item }) => Promise.resolve({ item: restoreJob(item), additionalItems: [], skipRestore: false }),
};
