import { describe, expect, it } from 'vitest';
import { backupScope } from './scope.js';
import { createRunSlots, planSlots, type SlotRequest } from './slots.js';

const req = (name: string, created: string, ...ns: string[]): SlotRequest => ({ key: `stowage/${name}`, name, created, scope: backupScope({ includedNamespaces: ns }) });

describe('planSlots', () => {
  it('admits disjoint runs up to the limit, oldest first', () => {
    const plan = planSlots('backup', [], [req('c', '3', 'z'), req('a', '1', 'x'), req('b', '2', 'y')], 2, '--concurrent-backups');
    expect(plan.get('stowage/a')).toEqual({ admit: true });
    expect(plan.get('stowage/b')).toEqual({ admit: true });
    expect(plan.get('stowage/c')).toEqual({ admit: false, waitingFor: 'waiting for a free slot: --concurrent-backups=2, taken by backup "a" (starting), backup "b" (starting)' });
  });

  it('queues a run behind a running, starting or earlier queued run it overlaps', () => {
    const running = [req('r', '0', 'x')];
    const plan = planSlots('backup', running, [req('a', '1', 'x', 'y'), req('b', '2', 'y'), req('c', '3', 'q'), req('d', '4', 'q')], 5, '--concurrent-backups');
    expect(plan.get('stowage/a')).toEqual({ admit: false, waitingFor: 'waiting for backup "r" (overlapping namespaces: x)' });
    expect(plan.get('stowage/b')).toEqual({ admit: false, waitingFor: 'waiting for backup "a", queued earlier (overlapping namespaces: y)' });
    expect(plan.get('stowage/c')).toEqual({ admit: true });
    expect(plan.get('stowage/d')).toEqual({ admit: false, waitingFor: 'waiting for backup "c", starting (overlapping namespaces: q)' });
  });

  it('orders runs created in the same second by name', () => {
    const plan = planSlots('restore', [], [req('b', '1', 'x'), req('a', '1', 'x')], 1, '--concurrent-restores');
    expect(plan.get('stowage/a')).toEqual({ admit: true });
    expect(plan.get('stowage/b')?.admit).toBe(false);
  });
});

describe('createRunSlots', () => {
  it('wakes the waiting keys, oldest first, when a run ends, and never admits two overlapping runs', () => {
    const waiting = new Set<string>();
    const slots = createRunSlots({ kind: 'backup', limit: 3, flag: '--concurrent-backups', stillWaiting: (k) => waiting.has(k) });
    const woken: string[] = [];
    slots.bind((k) => woken.push(k));
    const first = slots.admit(req('a', '1', 'x'));
    expect('release' in first).toBe(true);
    for (const r of [req('c', '3', 'x'), req('b', '2', 'x')]) {
      waiting.add(r.key);
      expect(slots.admit(r)).toEqual({ waitingFor: 'waiting for backup "a" (overlapping namespaces: x)' });
    }
    expect(slots.admit(req('d', '4', 'y'))).toHaveProperty('release');
    woken.length = 0;
    if ('release' in first) first.release();
    expect(woken).toEqual(['stowage/b', 'stowage/c']);
    // c is newer than b: it waits for b even when looked at first.
    expect(slots.admit(req('c', '3', 'x'))).toEqual({ waitingFor: 'waiting for backup "b", starting (overlapping namespaces: x)' });
    expect(slots.admit(req('b', '2', 'x'))).toHaveProperty('release');
    expect(slots.running().sort()).toEqual(['stowage/b', 'stowage/d']);
  });

  it('forgets a waiting run that went away, and wakes those queued behind it', () => {
    const waiting = new Set<string>(['stowage/b', 'stowage/c']);
    const slots = createRunSlots({ kind: 'backup', limit: 1, flag: '--concurrent-backups', stillWaiting: (k) => waiting.has(k) });
    const woken: string[] = [];
    slots.bind((k) => woken.push(k));
    const a = slots.admit(req('a', '1', 'x'));
    slots.admit(req('b', '2', 'y'));
    expect(slots.admit(req('c', '3', 'y'))).toEqual({ waitingFor: 'waiting for backup "b", queued earlier (overlapping namespaces: y)' });
    if ('release' in a) a.release();
    woken.length = 0;
    waiting.delete('stowage/b');
    slots.drop('stowage/b');
    expect(woken).toEqual(['stowage/c']);
    expect(slots.admit(req('c', '3', 'y'))).toHaveProperty('release');
  });

  it('leaves out of the plan a waiting key whose run is no longer New, even before its drop', () => {
    const waiting = new Set<string>(['stowage/a']);
    const slots = createRunSlots({ kind: 'backup', limit: 2, flag: '--concurrent-backups', stillWaiting: (k) => waiting.has(k) });
    const running = slots.admit(req('r', '0', 'x'));
    expect(slots.admit(req('a', '1', 'x', 'y'))).toHaveProperty('waitingFor');
    waiting.delete('stowage/a');
    expect(slots.admit(req('b', '2', 'y'))).toHaveProperty('release');
    if ('release' in running) running.release();
  });

  it('releases a slot once, and a stale release does not free a newer admission of the key', () => {
    const slots = createRunSlots({ kind: 'backup', limit: 1, flag: '--concurrent-backups', stillWaiting: () => true });
    const a = slots.admit(req('a', '1', 'x'));
    if (!('release' in a)) throw new Error('not admitted');
    a.release();
    const again = slots.admit(req('a', '1', 'x'));
    a.release();
    expect(slots.running()).toEqual(['stowage/a']);
    if ('release' in again) again.release();
    expect(slots.running()).toEqual([]);
  });
});
