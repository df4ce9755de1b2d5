/**
 * The Node.js version the README promises is one `npm install` is quiet on (issue #19, item 5): package.json's
 * `engines` starts there, and every locked package's `engines.node` accepts it (npm warns EBADENGINE otherwise).
 */
import { readFileSync } from 'node:fs';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

type Version = [number, number, number];

function parse(text: string): Version {
  const [major = 0, minor = 0, patch = 0] = text.replace(/^v/, '').split('.').map(Number);
  return [major, minor, patch];
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** npm's range syntax as the lock file uses it: `a || b`, each a space-separated AND of `>=x`, `^x`, `x`, `x.y`, `x.*`, `*`. */
function satisfies(version: Version, range: string): boolean {
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .replace(/(>=|<=|>|<|\^)\s+/g, '$1')
      .split(/\s+/)
      .every((written) => {
        if (written === '*' || written === 'x') return true;
        // `4.x`, `6.*`: a partial version.
        const comparator = written.replace(/\.(x|\*)/g, '');
        const match = /^(>=|\^|>|<=|<)?v?(\d+(?:\.\d+){0,2})$/.exec(comparator);
        if (!match) throw new Error(`range comparator not understood: ${comparator}`);
        const [, operator, bound = ''] = match;
        const low = parse(bound);
        const parts = bound.split('.').length;
        switch (operator) {
          case '>=':
            return compare(version, low) >= 0;
          case '>':
            return compare(version, low) > 0;
          case '<=':
            return compare(version, low) <= 0;
          case '<':
            return compare(version, low) < 0;
          case '^':
            return compare(version, low) >= 0 && version[0] === low[0];
          default:
            // A partial version is a range: `20` is 20.x.x, `20.9` is 20.9.x.
            return parts === 1
              ? version[0] === low[0]
              : parts === 2
                ? version[0] === low[0] && version[1] === low[1]
                : compare(version, low) === 0;
        }
      }),
  );
}

const promised = /Prerequisites: \*\*Node\.js (\d+)\+\*\*/.exec(read('README.md'))?.[1];

test('the README names the Node.js major it supports', () => {
  expect(promised).toBeDefined();
});

test("package.json's engines starts at the README's Node.js version", () => {
  const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
  expect(engines).toBe(`>=${promised}`);
});

test("every locked package accepts the README's Node.js version (npm install prints no engine warning)", () => {
  const lock = JSON.parse(read('package-lock.json')) as {
    packages: Record<string, { engines?: { node?: string }; os?: string[]; cpu?: string[] }>;
  };
  const version = parse(`${promised}.0.0`);
  // A platform's own binary (sharp's win32-ia32 build) is never installed elsewhere, so npm never checks its engines.
  const installable = (list: string[] | undefined, value: string) =>
    list === undefined || list.some((item) => item === value || (item.startsWith('!') && item.slice(1) !== value));
  const refusing = Object.entries(lock.packages)
    .filter(([, entry]) => installable(entry.os, process.platform) && installable(entry.cpu, process.arch))
    .filter(([, entry]) => typeof entry.engines?.node === 'string')
    .filter(([, entry]) => !satisfies(version, entry.engines?.node as string))
    .map(([name, entry]) => `${name || '(this package)'}: ${entry.engines?.node}`);
  expect(refusing).toEqual([]);
});

test('the range reader agrees with npm on the forms the lock file uses', () => {
  expect(satisfies([22, 0, 0], '>=22')).toBe(true);
  expect(satisfies([20, 19, 0], '>=22')).toBe(false);
  expect(satisfies([22, 0, 0], '^18.14.0 || ^20.0.0 || ^22.0.0 || >=24.0.0')).toBe(true);
  expect(satisfies([23, 0, 0], '^18.14.0 || ^20.0.0 || ^22.0.0 || >=24.0.0')).toBe(false);
  expect(satisfies([22, 0, 0], '18 || 20 || >=22')).toBe(true);
  expect(satisfies([21, 0, 0], '18 || 20 || >=22')).toBe(false);
  expect(satisfies([22, 0, 0], '>= 14')).toBe(true);
  expect(satisfies([22, 0, 0], '6.* || 8.* || >= 10.*')).toBe(true);
  expect(satisfies([22, 0, 0], '>=16 || 14 >=14.17')).toBe(true);
  expect(satisfies([14, 16, 0], '>=16 || 14 >=14.17')).toBe(false);
  expect(satisfies([22, 0, 0], '*')).toBe(true);
});
