import { describe, expect, it } from 'vitest';
import winston from 'winston';
import { newBackup, newRestore } from '../apis/v1/index.js';
import { newOutcomes, outcomeSlot, type ItemRef } from './outcomes.js';
import { newRestoreRequest } from './request.js';

const silent = winston.createLogger({ silent: true });

function setup(): { req: ReturnType<typeof newRestoreRequest>; outcomes: ReturnType<typeof newOutcomes> } {
  const req = newRestoreRequest(newRestore('r1', 'stowage', { backupName: 'b1' }), newBackup('b1', 'stowage'));
  return { req, outcomes: newOutcomes(req, silent, () => 3) };
}

describe('outcomes', () => {
  it("writes a planned item's outcome into its slot, made with the plan, once", () => {
    const { req, outcomes } = setup();
    const p: ItemRef = { groupResource: 'configmaps', namespace: 'shop', name: 'web' };
    const slot = outcomeSlot(p);
    p.slot = slot;
    const first = outcomes.record(p, { namespace: 'shop', name: 'web' }, 'created', 'created');
    expect(first).toBe(slot);
    expect(first).toEqual({ groupResource: 'configmaps', namespace: 'shop', name: 'web', action: 'created', reason: 'created' });
    // A second outcome for the same item (never made by the executor) does not overwrite the first.
    const second = outcomes.record(p, { namespace: 'other', name: 'web2' }, 'failed', 'boom', { validated: false });
    expect(second).not.toBe(slot);
    expect(second).toEqual({ groupResource: 'configmaps', namespace: 'other', name: 'web2', action: 'failed', reason: 'boom', validated: false });
    expect(first).toEqual({ groupResource: 'configmaps', namespace: 'shop', name: 'web', action: 'created', reason: 'created' });
    expect(req.outcomes).toEqual([first, second]);
    expect(req.summary).toEqual({ created: 1, updated: 0, skipped: 0, failed: 1 });
  });

  it('takes the target from the object when it differs from the plan, and makes a record without a slot', () => {
    const { req, outcomes } = setup();
    const p: ItemRef = { groupResource: 'configmaps', namespace: 'shop', name: 'web' };
    p.slot = outcomeSlot(p);
    const o = outcomes.record(p, { namespace: 'renamed', name: 'web' }, 'skipped', 'already exists and matches the backup');
    expect(o).toBe(p.slot);
    expect(o).toMatchObject({ namespace: 'renamed', name: 'web', action: 'skipped' });
    const bare = outcomes.record({ groupResource: 'secrets', namespace: 'shop', name: 'big' }, { namespace: 'shop', name: 'big' }, 'failed', 'over the cap');
    expect(bare).toEqual({ groupResource: 'secrets', namespace: 'shop', name: 'big', action: 'failed', reason: 'over the cap' });
    expect(req.outcomes).toHaveLength(2);
  });

  it('makes slots with the keys of a record made on the spot, in the same order', () => {
    const { outcomes } = setup();
    const slot = outcomeSlot({ groupResource: 'pods', namespace: 'a', name: 'b' });
    const made = outcomes.record({ groupResource: 'pods', namespace: 'a', name: 'c' }, { namespace: 'a', name: 'c' }, 'created', 'created');
    expect(Object.keys(slot)).toEqual(Object.keys(made));
  });
});
