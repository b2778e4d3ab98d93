import { describe, expect, it } from 'vitest';
import { byteBatches, MAX_BATCH_BYTES, MAX_BATCH_ITEMS } from './remoteActions.js';

const sized = (...bytes: number[]): Buffer[] => bytes.map((n) => Buffer.alloc(n));
const shape = (encoded: Buffer[]): number[][] => byteBatches(encoded).map(([from, to]) => encoded.slice(from, to).map((b) => b.byteLength));

describe('byteBatches', () => {
  it('keeps small items together up to MAX_BATCH_ITEMS', () => {
    const groups = byteBatches(sized(...Array<number>(MAX_BATCH_ITEMS * 2 + 1).fill(10)));
    expect(groups.map(([from, to]) => to - from)).toEqual([MAX_BATCH_ITEMS, MAX_BATCH_ITEMS, 1]);
  });

  it('starts a new group before MAX_BATCH_BYTES would be passed; an oversized item goes alone', () => {
    const half = MAX_BATCH_BYTES / 2;
    expect(shape(sized(half, half, 1, MAX_BATCH_BYTES + 5, 2))).toEqual([[half, half], [1], [MAX_BATCH_BYTES + 5], [2]]);
  });

  it('makes no group of nothing', () => {
    expect(byteBatches([])).toEqual([]);
  });
});
