// Services: cluster IPs and node ports are allocated by the target cluster; the old ones may be
// taken or outside its ranges. Headless Services keep clusterIP "None" (it is what makes them
// headless), and preserveNodePorts keeps node ports.
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { arrayAt, isRecord, recordAt } from '../objects.js';
import { selectorFor } from './selector.js';

export function restoreService(item: KubeObject, preserveNodePorts: boolean): KubeObject {
  const spec = recordAt(item, 'spec');
  if (spec === undefined) return item;
  if (spec.clusterIP !== 'None') {
    delete spec.clusterIP;
    delete spec.clusterIPs;
  }
  if (!preserveNodePorts) {
    for (const p of arrayAt(spec, 'ports') ?? []) if (isRecord(p)) delete p.nodePort;
    delete spec.healthCheckNodePort;
  }
  return item;
}

export const serviceAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['services'])),
  execute: ({ item, restore }) => {
    const spec = recordAt(restore, 'spec');
    return Promise.resolve({ item: restoreService(item, spec?.preserveNodePorts === true), additionalItems: [], skipRestore: false });
  },
};
