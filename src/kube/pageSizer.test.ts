import { describe, expect, it } from 'vitest';
import { FIRST_GUESS_ITEM_BYTES, PageSizer } from './pageSizer.js';

const MiB = 1024 * 1024;

describe('PageSizer', () => {
  it('asks for all items when the byte budget is off', () => {
    const s = new PageSizer(0);
    expect(s.listing('configmaps', 500).limit()).toBe(500);
    expect(s.cutoff).toBe(Infinity);
  });

  it('starts a resource of unknown size at a full page of typical objects, then fits pages to what it saw', () => {
    const s = new PageSizer(16 * MiB);
    const l = s.listing('configmaps', 500);
    expect(l.limit()).toBe(500);
    expect(new PageSizer(4 * MiB).listing('configmaps', 500).limit()).toBe(Math.floor((4 * MiB) / (FIRST_GUESS_ITEM_BYTES * 1.25)));
    l.observe(8 * MiB, 8); // 1 MiB items
    expect(l.limit()).toBe(12);
    expect(s.cutoff).toBe(32 * MiB);
  });

  it('under the default 1 MiB budget: 51 items first, then pages fitted to the objects seen', () => {
    const l = new PageSizer(1024 * 1024).listing('configmaps', 500);
    expect(l.limit()).toBe(51);
    l.observe(300 * 3 * 1024, 300); // 3 KiB objects, like the benchmark's
    expect(l.limit()).toBe(273);
    const small = new PageSizer(1024 * 1024).listing('leases', 500);
    small.observe(1600 * 100, 100);
    expect(small.limit()).toBe(500);
  });

  it('keeps the largest average of a listing, and starts the next listing of the resource from it', () => {
    const s = new PageSizer(16 * MiB);
    const l = s.listing('secrets', 500);
    l.observe(10 * MiB, 10);
    l.observe(1024 * 10, 10); // small items after large ones do not undo the caution
    expect(l.limit()).toBe(12);
    expect(s.listing('secrets', 500).limit()).toBe(12);
    expect(s.listing('pods', 500).limit()).toBe(500);
    const tiny = s.listing('leases', 500);
    tiny.observe(500 * 400, 500);
    expect(tiny.limit()).toBe(500);
  });

  it('after an overflow asks again at the unknown-size limit and at most half as many items, down to one', () => {
    const s = new PageSizer(16 * MiB);
    const l = s.listing('widgets', 500);
    l.observe(1000 * 500, 500);
    expect(l.limit()).toBe(500);
    l.overflowed(500);
    expect(l.limit()).toBe(8);
    l.overflowed(8);
    expect(l.limit()).toBe(4);
    l.overflowed(4);
    l.overflowed(2);
    l.overflowed(1);
    expect(l.limit()).toBe(1);
  });
});
