// `stowage backup cancel NAME` and `stowage restore cancel NAME`: set spec.cancel (a merge patch,
// conditional on the version read, so a run that finished meanwhile is looked at again), and with
// --wait follow the run until it is Canceled. A finished run cannot be canceled: usage error.
import { Command } from 'commander';
import { RESOURCES, isBackupTerminal, isRestoreTerminal, type Backup, type Restore } from '../../apis/v1/index.js';
import { isConflict, isNotFound } from '../../kube/index.js';
import { action, type Session } from './action.js';
import { CliError, UsageError } from './errors.js';
import { addGlobalOptions, type CliContext } from './kubeContext.js';
import { out } from './output.js';
import { waitForRun } from './wait.js';

type Kind = 'backup' | 'restore';
type Run = Backup | Restore;

const ATTEMPTS = 5;

interface KindInfo {
  res: typeof RESOURCES.Backup | typeof RESOURCES.Restore;
  noun: string;
  done(r: Run): number;
  isTerminal(r: Run): boolean;
  /** What the run did, for the last line ("1234 items backed up"). */
  did(r: Run): string;
}

const KINDS: Record<Kind, KindInfo> = {
  backup: {
    res: RESOURCES.Backup,
    noun: 'items backed up',
    done: (r) => (r as Backup).status?.progress?.itemsBackedUp ?? 0,
    isTerminal: (r) => isBackupTerminal((r as Backup).status?.phase),
    did: (r) => `${(r as Backup).status?.progress?.itemsBackedUp ?? 0} items backed up; nothing of it is restorable`,
  },
  restore: {
    res: RESOURCES.Restore,
    noun: 'items restored',
    done: (r) => (r as Restore).status?.progress?.itemsRestored ?? 0,
    isTerminal: (r) => isRestoreTerminal((r as Restore).status?.phase),
    did: (r) => {
      const s = (r as Restore).status?.summary;
      return `created ${s?.created ?? 0}, updated ${s?.updated ?? 0}, skipped ${s?.skipped ?? 0}, failed ${s?.failed ?? 0}; what it created or updated stays and is listed by \`stowage restore describe ${r.metadata.name}\``;
    },
  },
};

async function getRun(ctx: CliContext, kind: Kind, name: string): Promise<Run> {
  try {
    return await ctx.client.get<Run>(KINDS[kind].res, ctx.namespace, name);
  } catch (err) {
    if (isNotFound(err)) throw new CliError(`${kind} "${name}" not found in namespace ${ctx.namespace}`);
    throw err;
  }
}

/** Sets spec.cancel unless the run is finished (refused) or already asked to cancel; true when this call set it. */
async function requestCancel(ctx: CliContext, kind: Kind, name: string): Promise<{ set: boolean; phase: string }> {
  for (let attempt = 1; ; attempt++) {
    const run = await getRun(ctx, kind, name);
    const phase = run.status?.phase ?? 'New';
    if (phase === 'Canceled') return { set: false, phase };
    if (KINDS[kind].isTerminal(run) || phase === 'Deleting') {
      throw new UsageError(`${kind} "${name}" is already ${phase}: only a New or InProgress ${kind} can be canceled`);
    }
    if (run.spec.cancel === true) return { set: false, phase };
    try {
      await ctx.client.patch(KINDS[kind].res, ctx.namespace, name, { metadata: { resourceVersion: run.metadata.resourceVersion }, spec: { cancel: true } }, 'merge');
      return { set: true, phase };
    } catch (err) {
      // Changed since it was read (its phase may have moved on): read it again.
      if (!isConflict(err) || attempt >= ATTEMPTS) throw err;
    }
  }
}

async function cancelRun(kind: Kind, cmd: Command, s: Session): Promise<void> {
  const name = cmd.processedArgs[0] as string;
  const o = cmd.opts<{ wait?: boolean }>();
  const ctx = s.client();
  const req = await requestCancel(ctx, kind, name);
  if (req.phase === 'Canceled') {
    out(`${cap(kind)} "${name}" is already Canceled.`);
    return;
  }
  out(req.set
    ? `Request to cancel ${kind} "${name}" submitted successfully (it was ${req.phase}).`
    : `Cancel of ${kind} "${name}" was already requested (it is ${req.phase}).`);
  if (o.wait !== true) {
    out(`Run \`stowage ${kind} describe ${name}\` to see when it is Canceled.`);
    return;
  }
  const info = KINDS[kind];
  const final = await waitForRun<Run>({
    ctx, res: info.res, kind, name, noun: info.noun,
    snapshot: (r) => ({ phase: r.status?.phase ?? 'New', done: info.done(r), total: r.status?.progress?.totalItems ?? 0 }),
    isTerminal: info.isTerminal,
  });
  const phase = final.status?.phase ?? 'New';
  if (phase !== 'Canceled') {
    throw new CliError(`${kind} "${name}" finished ${phase} before the cancel took effect${final.status?.failureReason ? `: ${final.status.failureReason}` : ''}`);
  }
  out(`${cap(kind)} "${name}" Canceled: ${final.status?.failureReason ?? 'canceled'}; ${info.did(final)}.`);
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

export function cancelCommand(kind: Kind): Command {
  return addGlobalOptions(
    new Command('cancel')
      .description(`Cancel a New or InProgress ${kind}: it stops and ends Canceled, even while its storage is down (what is left to write waits for storage to return)${kind === 'backup' ? '; it is never restorable' : '; what it already created stays, and describe lists it'}`)
      .argument('<name>', `the ${kind}`)
      .option('-w, --wait', 'wait until it is Canceled'),
  ).action(action(async (cmd, s) => cancelRun(kind, cmd, s)));
}
