// `stowage restore delete NAME...|--selector|--all`: deletes Restore objects. The server removes
// each one's log, results and resource list from object storage before the object goes (the
// restore-artifacts finalizer, controller/restoreArtifacts.ts); the CLI never writes to the bucket.
// What a restore created in the cluster stays: deleting the record undoes nothing.
import { Command, Option } from 'commander';
import { RESOURCES, type Restore } from '../../apis/v1/index.js';
import { isNotFound } from '../../kube/index.js';
import { sleep } from '../../util/backoff.js';
import { action, type Session } from './action.js';
import { CliError } from './errors.js';
import { parseTimeout } from './flags.js';
import { addGlobalOptions } from './kubeContext.js';
import { out } from './output.js';
import { getRestore } from './restore.js';
import {
  addSelectionFlags, checkConfirmable, checkSelection, confirmOrStop, namesText, selectObjects, selectionText, type SelectionFlags,
} from './selection.js';

async function deleteRestores(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<SelectionFlags & { confirm?: boolean; wait?: boolean; timeout: string }>();
  const names = cmd.processedArgs[0] as string[];
  const timeoutMs = parseTimeout('timeout', o.timeout);
  checkSelection(names, o, 'restore', 'restores');
  checkConfirmable(o.confirm);
  const ctx = s.client();
  const selected = await selectObjects<Restore>(names, o, {
    kind: 'restore', plural: 'restores', namespace: ctx.namespace,
    get: (n) => getRestore(ctx, n),
    list: async (sel) => (await ctx.client.listAll<Restore>(RESOURCES.Restore, { namespace: ctx.namespace, labelSelector: sel })).items,
  });
  if (selected.length === 0) {
    out(`No ${selectionText(o, 'restores', ctx.namespace)}: nothing to delete.`);
    return;
  }
  // Deleting the record of a running restore would not stop it, and would hide what it does.
  const running = selected.filter((r) => r.status?.phase === 'InProgress').map((r) => r.metadata.name);
  if (running.length > 0) {
    throw new CliError(`${namesText('restore', 'restores', running)} ${running.length === 1 ? 'is' : 'are'} still InProgress; wait until ${running.length === 1 ? 'it finishes' : 'they finish'}, then delete (nothing was deleted)`);
  }
  const chosen = selected.map((r) => r.metadata.name);
  await confirmOrStop(o.confirm, `Delete ${namesText('restore', 'restores', chosen)} and ${chosen.length === 1 ? 'its' : 'their'} logs and results in object storage? What ${chosen.length === 1 ? 'it' : 'they'} restored stays in the cluster.`);
  for (const n of chosen) {
    try {
      await ctx.client.delete(RESOURCES.Restore, ctx.namespace, n);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    out(`Request to delete restore "${n}" submitted successfully.`);
  }
  if (o.wait !== true) {
    out('The server removes the logs and results from object storage, then the Restore objects go. What was restored stays in the cluster.');
    return;
  }
  const deadline = Date.now() + timeoutMs;
  for (const n of chosen) {
    for (;;) {
      let r: Restore;
      try {
        r = await ctx.client.get<Restore>(RESOURCES.Restore, ctx.namespace, n);
      } catch (err) {
        if (isNotFound(err)) break;
        throw err;
      }
      if (Date.now() > deadline) {
        throw new CliError(`restore "${n}" still exists after ${o.timeout} (finalizers: ${(r.metadata.finalizers ?? []).join(', ') || 'none'}); see \`stowage restore describe ${n}\` for the server's events`);
      }
      await sleep(250);
    }
    out(`Restore "${n}" deleted.`);
  }
}

export function restoreDeleteCommand(): Command {
  const del = addGlobalOptions(
    new Command('delete')
      .description('Delete restores: their logs and results in object storage, and the Restore objects (what they restored stays)')
      .argument('[names...]', 'restores to delete (or --selector, or --all)')
      .option('--confirm', 'do not ask for confirmation')
      .option('-w, --wait', 'wait until the restores are gone')
      .addOption(new Option('--timeout <duration>', 'how long --wait waits').default('5m')),
  ).action(action(async (cmd, s) => deleteRestores(cmd, s)));
  return addSelectionFlags(del, 'restores');
}
