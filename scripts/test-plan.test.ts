import { describe, expect, it } from 'vitest';
import { testRuns } from './test-plan.mjs';

describe('npm test runs each test once', () => {
  it('runs the unit project on npm\'s node and the integration project on the image\'s Node', () => {
    expect(testRuns({ extra: [], npmNode: '/usr/bin/node', runtimeNode: '/cache/node-v24/bin/node' })).toEqual([
      { label: 'unit tests', node: '/usr/bin/node', args: ['--project', 'unit'] },
      { label: 'integration tests', node: '/cache/node-v24/bin/node', args: ['--project', 'integration'] },
    ]);
  });

  it('makes one run of everything when npm\'s node is the image\'s', () => {
    expect(testRuns({ extra: [], npmNode: '/n/node', runtimeNode: '/n/node' })).toEqual([{ label: 'unit and integration tests', node: '/n/node', args: [] }]);
  });

  it('passes extra arguments to one run on the image\'s Node', () => {
    expect(testRuns({ extra: ['test/cluster.test.ts'], npmNode: '/usr/bin/node', runtimeNode: '/n24/node' })).toEqual([
      { label: 'tests', node: '/n24/node', args: ['test/cluster.test.ts'] },
    ]);
  });
});
