import { describe, expect, it } from 'vitest';
import { ANNOTATION_CANCELED_BY } from '../../apis/v1/index.js';
import { abortIfCanceled, cancelOf, RunCanceled } from './cancel.js';
import { createRunRegistry, type ActiveRun } from './context.js';

function registered(name: string): { ctx: { runs: ReturnType<typeof createRunRegistry>; namespace: string }; signal: AbortSignal } {
  const runs = createRunRegistry();
  const ac = new AbortController();
  const run: ActiveRun = {
    kind: 'backup', namespace: 'stowage', name, logPath: '', linesSoFar: () => Promise.resolve([]), follow: () => () => undefined,
    abort: (reason) => ac.abort(typeof reason === 'string' ? new Error(reason) : reason), done: Promise.resolve(),
  };
  runs.add(run);
  return { ctx: { runs, namespace: 'stowage' }, signal: ac.signal };
}

describe('abortIfCanceled', () => {
  it('aborts the running run of an object whose spec.cancel is true, naming who canceled it', () => {
    const { ctx, signal } = registered('b1');
    abortIfCanceled(ctx, 'backup', { metadata: { name: 'b1', namespace: 'stowage', annotations: { [ANNOTATION_CANCELED_BY]: 'alice' } }, spec: { cancel: true } });
    expect(signal.aborted).toBe(true);
    expect(cancelOf(signal)?.message).toBe('canceled by alice');
  });

  it('leaves runs alone without a cancel, of another name or kind; says when nobody is recorded', () => {
    const { ctx, signal } = registered('b1');
    abortIfCanceled(ctx, 'backup', { metadata: { name: 'b1', namespace: 'stowage' }, spec: {} });
    abortIfCanceled(ctx, 'backup', { metadata: { name: 'b2', namespace: 'stowage' }, spec: { cancel: true } });
    abortIfCanceled(ctx, 'restore', { metadata: { name: 'b1', namespace: 'stowage' }, spec: { cancel: true } });
    expect(signal.aborted).toBe(false);
    expect(new RunCanceled(undefined).message).toBe('canceled through spec.cancel (by whom is not recorded)');
  });

  it('tells a cancel from a shutdown', () => {
    const ac = new AbortController();
    ac.abort(new Error('the server shut down before the backup finished'));
    expect(cancelOf(ac.signal)).toBeUndefined();
  });
});
