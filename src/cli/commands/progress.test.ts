// The --wait progress display with a fake clock: the rate over the recent window, the time left,
// and the bar and plain lines that show them.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { progressText } from './describe.js';
import { clampProgress, createProgress, createRateMeter, formatEta, formatRate, renderBar, renderPlain } from './progress.js';

function sink(): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return { stream: w as unknown as NodeJS.WriteStream, text: () => text };
}

describe('rate meter', () => {
  const p = (done: number, total = 1000, phase = 'InProgress') => ({ phase, done, total });

  it('says nothing until a second has been observed, then the rate and the time left', () => {
    const m = createRateMeter(10_000);
    m.add(0, 0);
    expect(m.speed(p(0))).toEqual({});
    m.add(500, 50);
    expect(m.speed(p(50))).toEqual({});
    m.add(2000, 200);
    // 200 items in 2 s: 100/s, 800 left: 8 s.
    expect(m.speed(p(200))).toEqual({ rate: 100, etaMs: 8000 });
  });

  it('measures over the recent window only, so a run that speeds up is not judged by its slow start', () => {
    const m = createRateMeter(10_000);
    m.add(0, 0);
    m.add(20_000, 20); // 1/s for 20 s
    for (let t = 21_000; t <= 40_000; t += 1000) m.add(t, 20 + ((t - 20_000) / 1000) * 50); // then 50/s
    const s = m.speed(p(1020, 2020));
    expect(s.rate).toBe(50);
    expect(s.etaMs).toBe(20_000);
  });

  it('keeps the newest sample older than the window as its start when polls are slower than the window', () => {
    const m = createRateMeter(1000);
    m.add(0, 0);
    m.add(5000, 100);
    expect(m.speed(p(100))).toEqual({ rate: 20, etaMs: 45_000 });
  });

  it('shows a rate of 0 and no time left while nothing moves, and starts over when the count goes back', () => {
    const m = createRateMeter();
    m.add(0, 10);
    m.add(3000, 10);
    expect(m.speed(p(10))).toEqual({ rate: 0 });
    m.add(4000, 2);
    expect(m.speed(p(2))).toEqual({});
  });

  it('gives no time left without a total, nor anything once the run is final', () => {
    const m = createRateMeter();
    m.add(0, 0);
    m.add(2000, 10);
    expect(m.speed(p(10, 0))).toEqual({ rate: 5 });
    expect(m.speed(p(10, 10, 'Completed'))).toEqual({});
  });
});

describe('rendering', () => {
  it('formats rates and times left briefly, rounding the time up', () => {
    expect(formatRate(2.345)).toBe('2.3');
    expect(formatRate(123.6)).toBe('124');
    expect(formatEta(1)).toBe('1s');
    expect(formatEta(44_100)).toBe('45s');
    expect(formatEta(187_000)).toBe('3m07s');
    expect(formatEta(7_450_000)).toBe('2h05m');
  });

  it('puts the rate and the time left on the bar and on plain lines', () => {
    expect(renderBar({ phase: 'InProgress', done: 5, total: 10 }, 'items backed up', 10, { rate: 2.5, etaMs: 2000 }))
      .toBe('[#####.....]  50%  5/10 items backed up  2.5/s  ETA 2s  (InProgress)');
    expect(renderPlain({ phase: 'InProgress', done: 300, total: 1000 }, 'items restored', { rate: 140, etaMs: 5000 }))
      .toBe('InProgress: 300/1000 items restored (30%), 140 items/s, ETA 5s');
  });

  it('never shows a count past its total: the total is raised to the count', () => {
    expect(clampProgress({ phase: 'InProgress', done: 5004, total: 5003 })).toEqual({ phase: 'InProgress', done: 5004, total: 5004 });
    expect(clampProgress({ phase: 'InProgress', done: 3, total: 5003 })).toEqual({ phase: 'InProgress', done: 3, total: 5003 });
    expect(clampProgress({ phase: 'New', done: 0, total: 0 })).toEqual({ phase: 'New', done: 0, total: 0 });
    expect(renderBar({ phase: 'InProgress', done: 5004, total: 5003 }, 'items backed up', 10)).toBe('[##########] 100%  5004/5004 items backed up  (InProgress)');
    expect(renderPlain({ phase: 'InProgress', done: 5004, total: 5003 }, 'items backed up')).toBe('InProgress: 5004/5004 items backed up (100%)');
    expect(progressText(5004, 5003)).toBe('5004 of 5004');
    expect(progressText(12, 40)).toBe('12 of 40');
  });

  it('redraws the bar with the measured rate on a terminal', () => {
    const s = sink();
    let t = 0;
    const bar = createProgress({ stream: s.stream, noun: 'items', tty: true, now: () => t });
    bar.update({ phase: 'InProgress', done: 0, total: 100 });
    t = 2000;
    bar.update({ phase: 'InProgress', done: 40, total: 100 });
    bar.finish();
    const frames = s.text().split('\r').filter((x) => x !== '');
    expect(frames).toHaveLength(2);
    expect(frames[1]).toBe('[############..................]  40%  40/100 items  20/s  ETA 3s  (InProgress)\x1b[K\n');
  });
});
