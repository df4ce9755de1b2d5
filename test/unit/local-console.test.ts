/**
 * What the local stack prints for log entries (scripts/local/console.ts): JSON lines unchanged when not on a terminal,
 * one readable line each on a terminal, and a burst of identical errors (DynamoDB Local gone: one per request) printed
 * once and then counted.
 */
import { createConsoleSink, logFormat, prettyLine } from '../../scripts/local/console.js';
import type { LogEntry } from '../../shared/log.js';

function capture(format: 'json' | 'pretty') {
  const lines: string[] = [];
  let clock = Date.parse('2026-11-26T10:00:00.000Z');
  const console = createConsoleSink({
    format,
    out: (line) => lines.push(line),
    windowMs: 5000,
    now: () => clock,
  });
  const advance = (ms: number) => {
    clock += ms;
  };
  return { lines, console, advance };
}

function failure(requestId: string): LogEntry {
  const error = { name: 'ResourceNotFoundException', message: 'connect ECONNREFUSED 127.0.0.1:41234', stack: 'at x' };
  return { level: 'error', time: '2026-11-26T10:00:00.000Z', message: 'unhandled error', requestId, error };
}

test('200 identical errors (differing only in request id) print once, then once more with their count', () => {
  const { lines, console } = capture('json');
  for (let i = 0; i < 200; i++) console.sink(failure(`req-${i}`));
  expect(lines).toHaveLength(1);
  console.stop();
  expect(lines).toHaveLength(2);
  expect(JSON.parse(lines[1] as string)).toMatchObject({ message: 'unhandled error', repeated: 199 });
});

test('different errors are each printed, and an error seen again after a quiet spell is printed again', () => {
  const { lines, console, advance } = capture('json');
  console.sink(failure('a'));
  console.sink({ ...failure('b'), error: { name: 'Error', message: 'another cause' } });
  expect(lines).toHaveLength(2);
  advance(6000);
  console.flush();
  advance(6000);
  console.sink(failure('c'));
  expect(lines).toHaveLength(3);
  console.stop();
});

test('not on a terminal, an entry is the JSON line the service writes, unchanged', () => {
  const { lines, console } = capture('json');
  const entry: LogEntry = { level: 'info', time: '2026-11-26T10:00:00.000Z', message: 'run processed', jobId: 'run_1' };
  console.sink(entry);
  console.stop();
  expect(lines).toEqual([JSON.stringify(entry)]);
});

test('on a terminal, an entry is one readable line: time, level, message, fields; an error without its stack', () => {
  const line = prettyLine(failure('req-1'));
  expect(line).toBe(
    '10:00:00 ERROR unhandled error  requestId=req-1  error="ResourceNotFoundException: connect ECONNREFUSED 127.0.0.1:41234"',
  );
  expect(prettyLine({ ...failure('req-1'), repeated: 57 })).toMatch(/\(repeated 57 more times\)$/);
});

test('pretty on a terminal, JSON otherwise, unless VISION_LOCAL_LOG_FORMAT says which', () => {
  expect(logFormat(undefined, true)).toBe('pretty');
  expect(logFormat(undefined, false)).toBe('json');
  expect(logFormat('json', true)).toBe('json');
  expect(logFormat('pretty', false)).toBe('pretty');
});
