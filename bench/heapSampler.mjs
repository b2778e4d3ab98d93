// Loaded into the benchmark's server with `node --import` (bench:memory --heap-sample): where its
// memory is at its peak. Every 100 ms it reads process.memoryUsage() and V8's heap spaces; each
// new high of RSS is appended to the file STOWAGE_HEAP_SAMPLE names (one JSON line), so the last
// line is the breakdown at the peak: V8's heap by space, memory outside it (Buffers), and the rest.
// Plain JavaScript: the server runs from dist/ under node, not under tsx.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';

const file = process.env.STOWAGE_HEAP_SAMPLE;
if (file !== undefined && file !== '') {
  const fd = fs.openSync(file, 'a', 0o600);
  const mib = (b) => Math.round((b / 1048576) * 10) / 10;
  const t0 = performance.now();
  let peak = 0;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    if (m.rss <= peak) return;
    peak = m.rss;
    const spaces = {};
    for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = { size: mib(s.space_size), used: mib(s.space_used_size) };
    fs.writeSync(fd, `${JSON.stringify({
      seconds: Math.round(performance.now() - t0) / 1000,
      rss: mib(m.rss), heapTotal: mib(m.heapTotal), heapUsed: mib(m.heapUsed), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers), spaces,
    })}\n`);
  }, 100);
  timer.unref();
}
