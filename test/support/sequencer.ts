// Longest integration files first, so the 3 workers end together instead of a 3-minute outage test
// starting last. Vitest's own order uses the durations it cached from the last run; a fresh clone
// (CI) has none and would go by file size, so the durations measured on CI are committed in
// durations.json (refresh with `node scripts/test-durations.mjs` after a full `npm test`).
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
      const cached = this.ctx.cache.getFileTestResults(`${f.project.name}:${path.relative(root, f.moduleId)}`);
      return cached ? cached.duration / 1000 : (committed[path.relative(root, f.moduleId)] ?? 0);
    };
    return [...base].sort((a, b) => {
      // Groups and projects keep the base order (unit first); within one, longest first.
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0 || a.project.name !== b.project.name) return (rank.get(a) ?? 0) - (rank.get(b) ?? 0);
      return estimate(b) - estimate(a) || (rank.get(a) ?? 0) - (rank.get(b) ?? 0);
    });
  }
}
