// Types of test-plan.mjs (plain JavaScript: test.mjs loads it without tsx).
export interface TestRun {
  label: string;
  /** The node binary vitest runs on. */
  node: string;
  args: string[];
}
export function testRuns(o: { extra: string[]; npmNode: string; runtimeNode: string }): TestRun[];
