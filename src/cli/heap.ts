// The server's old-generation growth policy. Under a heap limit below 2 GiB (a 1 GiB container
// gives 512 MiB), V8 lets the old generation grow only 1.1-1.4x what survived the last full
// collection; a backup promotes its list pages, so it then collects every ~15 MB promoted (about
// 0.3-0.8 s of CPU per 10k items, bench/README.md). A fixed factor, like Go's GOGC, trades a bounded
// share of heap for that CPU. The default is 60%, not Go's 100%: at 100% a 50k-item restore's peak
// RSS was 1.57x a 5k one's.
import v8 from 'node:v8';

/**
 * Sets V8's growing factor to 1 + percent/100 unless `percent` is 0 or node's command line already
 * sets one (an operator's `node --heap-growing-percent=N` wins). Returns the factor's source.
 */
export function applyHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): 'flag' | 'node' | 'v8' {
  if (execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'))) return 'node';
  if (percent <= 0) return 'v8';
  v8.setFlagsFromString(`--heap-growing-percent=${Math.round(percent)}`);
  return 'flag';
}
