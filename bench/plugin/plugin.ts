// The benchmark's third-party plugin: one BackupItemAction that applies to every item and stamps
// an annotation on it, the smallest useful action. It measures what a plugin costs per item (the
// gRPC round trip and the (de)serialisation of the item), not the action's own work.
// bench/plugin/build.ts compiles it into a plugin directory, as a plugin author would ship it.
import { servePlugins, type BackupItemAction, type ResourceSelector } from '../../src/plugin/sdk/index.js';
import { BENCH_ACTION, STAMP_ANNOTATION } from './names.js';

const everything: ResourceSelector = { includedNamespaces: [], excludedNamespaces: [], includedResources: [], excludedResources: [], labelSelector: '' };

const stamp: BackupItemAction = {
  appliesTo: () => Promise.resolve(everything),
  execute: ({ item }) =>
    Promise.resolve({
      item: { ...item, metadata: { ...item.metadata, annotations: { ...item.metadata.annotations, [STAMP_ANNOTATION]: 'true' } } },
      additionalItems: [],
    }),
};

await servePlugins({ backupItemActions: { [BENCH_ACTION]: () => stamp } });
