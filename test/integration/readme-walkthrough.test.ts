/**
 * The README's curl walkthrough, run as a reader would paste it (issue #19, item 15): against the suite's stack, with
 * the environment `npm start`'s export line sets. Its poll step waits for the run to finish, and the sample completed
 * run the README shows has exactly the fields the real run it polled has.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { KEYS, stack } from './client.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The first fenced block of `language` after `heading`. */
function block(heading: string, language: string): string {
  const from = README.indexOf(heading);
  const start = README.indexOf(`\`\`\`${language}\n`, from) + language.length + 4;
  return README.slice(start, README.indexOf('```', start));
}

test('the walkthrough runs as written: its poll loop ends on the completed run, whose fields the sample shows', () => {
  const script = block('## Walkthrough with curl', 'bash');
  const out = spawnSync('bash', ['-e', '-c', script], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, VISION_BASE_URL: stack().baseUrl, VISION_API_KEY: KEYS.a },
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(out.stderr).toBe('');
  expect(out.status).toBe(0);
  const polled = out.stdout
    .split('\n')
    .filter((line) => line.startsWith('{"jobId"'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return []; // An answer printed without a newline, with the next one on its line.
      }
    })
    .find((run) => run.status === 'completed' && 'result' in run);
  expect(polled).toBeDefined();

  const sample = JSON.parse(block('A completed run, as step 4 printed it', 'json')) as Record<string, unknown>;
  expect(Object.keys(sample).sort()).toEqual(Object.keys(polled as object).sort());
  expect(Object.keys(sample.file as object).sort()).toEqual(Object.keys(polled?.file as object).sort());
});
