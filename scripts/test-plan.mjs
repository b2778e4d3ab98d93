// Which vitest runs `npm test` makes, on which node. Every test runs once: the unit tests on the
// node that runs npm (the oldest Node the CLI supports, >= 20.19, is what developers and the build
// machines have: pure logic that breaks there breaks for them), the integration tests on the
// image's Node (what the server runs on in a pod). Running the unit tests on both found nothing
// typecheck does not: the TypeScript lib (ES2023) and @types/node 20 already refuse newer APIs.
// Extra arguments (`npm test -- test/x.test.ts`) go to one run on the image's Node.

/**
 * @param {{ extra: string[]; npmNode: string; runtimeNode: string }} o
 * @returns {{ label: string; node: string; args: string[] }[]}
 */
export function testRuns({ extra, npmNode, runtimeNode }) {
  if (extra.length > 0) return [{ label: 'tests', node: runtimeNode, args: extra }];
  if (npmNode === runtimeNode) return [{ label: 'unit and integration tests', node: runtimeNode, args: [] }];
  return [
    { label: 'unit tests', node: npmNode, args: ['--project', 'unit'] },
    { label: 'integration tests', node: runtimeNode, args: ['--project', 'integration'] },
  ];
}
