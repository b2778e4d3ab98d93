// Longest integration files first, so the 3 workers end together instead of a 3-minute outage test
// starting last. Vitest's own order uses the durations it cached from the last run; a fresh clone
// (CI) has none and would go by file size, so the durations measured on CI are committed in
// durations.json (refresh with `node scripts/test-durations.mjs` after a full `npm test`), and each
// file's estimate is the larger of the two.
import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const committed = JSON.parse(fs.readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as Record<string, number>;

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = new Map(base.map((f, i) => [f, i]));
    const root = this.ctx.config.root;
    const estimate = (f: TestSpecification): number => {
      const file = path.relative(root, f.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${f.project.name}:${file}`);
      // The larger of the two: a filtered or bailed-out run caches a near-zero duration.
      return Math.max((cached?.duration ?? 0) / 1000, committed[file] ?? 0);
    };
    const byRank = (a: TestSpecification, b: TestSpecification): number => (rank.get(a) ?? 0) - (rank.get(b) ?? 0);
    // Projects keep the base order (group order, so unit first); within one, longest first.
    return [...base].sort((a, b) => (a.project.name !== b.project.name ? byRank(a, b) : estimate(b) - estimate(a) || byRank(a, b)));
  }
}
