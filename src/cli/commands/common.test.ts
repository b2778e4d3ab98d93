import { describe, expect, it } from 'vitest';
import { describeRunHeader } from './common.js';

describe('describeRunHeader', () => {
  it('says what a queued run waits for, and only while it is New', () => {
    const why = 'waiting for backup "first" (overlapping namespaces: shop)';
    expect(describeRunHeader('New', undefined, undefined, 0, 0, why)).toMatch(/^Phase: +New\nQueued: +waiting for backup "first" \(overlapping namespaces: shop\)$/m);
    expect(describeRunHeader('Completed', undefined, undefined, 0, 0, why)).not.toContain('Queued');
    expect(describeRunHeader('New', undefined, undefined, 0, 0)).not.toContain('Queued');
  });
});
