import { describe, expect, it } from 'vitest';
import { WatchLineSplitter } from './watchLines.js';

const event = (text: string): string => `${JSON.stringify({ type: 'ADDED', object: { data: { text } } })}\n`;

describe('WatchLineSplitter', () => {
  it('keeps multi-byte characters split across chunks, at every split point', () => {
    const text = 'é € 😀 日本語 ü';
    const bytes = Buffer.from(event(text) + event('second'), 'utf8');
    for (let cut = 1; cut < bytes.length; cut++) {
      const s = new WatchLineSplitter();
      const lines = [...s.push(bytes.subarray(0, cut)), ...s.push(bytes.subarray(cut))];
      expect(lines.map((l) => (JSON.parse(l) as { object: { data: { text: string } } }).object.data.text)).toEqual([text, 'second']);
    }
  });

  it('keeps them when every byte is its own chunk', () => {
    const text = '😀'.repeat(3) + 'ß';
    const s = new WatchLineSplitter();
    const lines: string[] = [];
    for (const b of Buffer.from(event(text), 'utf8')) lines.push(...s.push(Buffer.from([b])));
    expect(lines).toEqual([event(text).trim()]);
  });

  it('returns several lines of one chunk in order, skips blank lines and holds back an unfinished one', () => {
    const s = new WatchLineSplitter();
    expect(s.push(Buffer.from('{"a":1}\n\n  \r\n{"b":2}\n{"c"'))).toEqual(['{"a":1}', '{"b":2}']);
    expect(s.push(Buffer.from(':3}\n'))).toEqual(['{"c":3}']);
    expect(s.push(Buffer.from(''))).toEqual([]);
  });
});
