// Names shared by the benchmark plugin and the harness that checks its work.
export const BENCH_ACTION = 'bench.stowage.dev/stamp';
export const STAMP_ANNOTATION = 'bench.stowage.dev/stamped';
