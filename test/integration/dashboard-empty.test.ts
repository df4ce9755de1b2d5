/**
 * What the dashboard says when there is nothing to show (issue #19 item 14), for a tenant without a single run: how
 * to create one, how to widen filters that match nothing, and usage as one line instead of empty cards and charts.
 */
import type { Page } from 'playwright-core';
import { connect, type DashboardBrowser, openDashboard, shot, statusSays, text } from '../support/dashboard-page.js';
import { createScopedKey } from '../support/local-stack.js';
import { stack } from './client.js';

let dashboard: DashboardBrowser;
let page: Page;

beforeAll(async () => {
  const tenant = `tenant-empty-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const key = await createScopedKey(stack(), tenant, ['runs:read', 'runs:verify']);
  dashboard = await openDashboard();
  page = dashboard.page;
  await page.goto(`${stack().baseUrl}/`);
  await connect(page, key);
  await statusSays(page, /Connected\. 0 runs on page 1/);
});

afterAll(async () => {
  await dashboard?.browser.close();
});

test('no runs yet: the list says how to create one (the CLI line names this service) instead of an empty table', async () => {
  const empty = page.getByRole('note');
  await empty.getByRole('heading', { name: 'No runs yet' }).waitFor();
  const command = await text(empty.locator('pre'));
  expect(command).toContain(`export VISION_BASE_URL=${stack().baseUrl}`);
  expect(command).toContain('npx vision analyze');
  expect(await page.locator('#runs-table').isVisible()).toBe(false);
  expect(await page.getByRole('navigation', { name: 'Pages of runs' }).isVisible()).toBe(false);
  await shot(page, 'empty-runs');
});

test('filters that match nothing say so and offer to clear them', async () => {
  await page.getByLabel('Status', { exact: true }).selectOption('failed');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText('No runs match these filters.').waitFor();
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await page.getByRole('heading', { name: 'No runs yet' }).waitFor();
  expect(await page.getByLabel('Status', { exact: true }).inputValue()).toBe('');
});

test('usage with no runs in the range is one line: no cards, no table, no empty charts', async () => {
  await page.getByRole('button', { name: 'Usage', exact: true }).click();
  await statusSays(page, /Usage for the last 7 days/);
  const line = page.locator('#usage-empty');
  expect(await text(line)).toBe(
    'No runs in the last 7 days: usage appears here once runs are created. A longer range may find older ones.',
  );
  expect(await page.getByRole('img').count()).toBe(0);
  expect(await page.locator('#usage-table').isVisible()).toBe(false);
  expect(await page.locator('#usage-cards').isVisible()).toBe(false);
  await shot(page, 'empty-usage');
  expect(dashboard.problems).toEqual([]);
});
