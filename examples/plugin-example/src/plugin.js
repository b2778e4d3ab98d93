// Serves the example's actions. `servePlugins` does the protocol work: it checks that the Stowage
// server started this process, listens on a private unix socket, prints the handshake line, and
// exits when the server goes away.
import { log, servePlugins } from 'stowage/plugin-sdk';
import { annotateOnBackup, CONFIGMAPS, markOnRestore } from './actions.js';

export const BACKUP_ACTION = 'example.com/annotate-configmaps';
export const RESTORE_ACTION = 'example.com/mark-restored-configmaps';

export async function main() {
  await servePlugins({
    backupItemActions: {
      [BACKUP_ACTION]: () => ({
        appliesTo: async () => CONFIGMAPS,
        execute: async (input) => {
          // Lines logged during a call land in that backup's own log.
          log.info('annotating ConfigMap', { namespace: input.item.metadata.namespace, name: input.item.metadata.name });
          return annotateOnBackup(input);
        },
      }),
    },
    restoreItemActions: {
      [RESTORE_ACTION]: () => ({
        appliesTo: async () => CONFIGMAPS,
        execute: async (input) => markOnRestore(input),
      }),
    },
  });
}
