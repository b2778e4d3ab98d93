import { describe, expect, it } from 'vitest';
import { createRunRegistry, type ActiveRun, type RunCounts } from './context.js';

const run = (kind: ActiveRun['kind'], name: string): ActiveRun => ({
  kind, namespace: 'stowage', name, logPath: '', linesSoFar: () => Promise.resolve([]), follow: () => () => undefined, abort: () => undefined, done: Promise.resolve(),
});

describe('createRunRegistry', () => {
  it('tells its listener how many backups and restores run after each start and end', () => {
    const heard: RunCounts[] = [];
    const runs = createRunRegistry((c) => heard.push(c));
    runs.add(run('backup', 'a'));
    runs.add(run('restore', 'r'));
    runs.add(run('backup', 'b'));
    runs.remove('backup', 'stowage', 'a');
    runs.remove('backup', 'stowage', 'missing');
    runs.remove('backup', 'stowage', 'b');
    expect(heard).toEqual([
      { backups: 1, restores: 0 }, { backups: 1, restores: 1 }, { backups: 2, restores: 1 }, { backups: 1, restores: 1 }, { backups: 0, restores: 1 },
    ]);
    expect(runs.list().map((r) => r.name)).toEqual(['r']);
  });
});
