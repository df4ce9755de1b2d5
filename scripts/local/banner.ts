/**
 * The few lines `npm start` prints once it is ready: where the API is, where its data lives, which key to use, and a
 * line to paste into another shell. Not to undo: a key is printed only when the stack generated it; keys the operator
 * supplied (VISION_DEV_API_KEYS) are never echoed, only their tenants named.
 */
import * as path from 'node:path';

export interface BannerFacts {
  baseUrl: string;
  /** The key the stack generated (none when keys were supplied). */
  generated?: { tenantId: string; key: string };
  /** Tenants of the keys given in VISION_DEV_API_KEYS. */
  suppliedTenants: string[];
  /** The data folder, or null when the configured endpoints hold the data or nothing is kept (`inMemory`). */
  dataDir: string | null;
  inMemory?: boolean;
  /** The data folder held data from an earlier run. */
  reused: boolean;
}

/** A folder as the operator would type it: relative to the working directory when inside it. */
export function shownDir(dir: string): string {
  const relative = path.relative(process.cwd(), dir);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? `${relative}/` : dir;
}

export function banner(facts: BannerFacts): string {
  const lines = ['', `Vision Analysis Service (local stack) at ${facts.baseUrl}  · dashboard ${facts.baseUrl}/`];
  if (facts.inMemory) {
    lines.push('  data     in memory (--in-memory): nothing is kept when the stack stops');
  } else if (facts.dataDir === null) {
    lines.push('  data     in the AWS endpoints you configured');
  } else {
    lines.push(
      `  data     ${shownDir(facts.dataDir)} (${facts.reused ? 'kept from the last run' : 'new'}; \`npm start -- --fresh\` starts empty)`,
      '           tables and uploaded files survive a restart; queued runs are sent to the worker again at start',
    );
  }
  if (facts.generated) {
    lines.push(
      `  API key  ${facts.generated.key} (tenant "${facts.generated.tenantId}", generated, kept in the data folder)`,
    );
    lines.push('', `  export VISION_BASE_URL=${facts.baseUrl} VISION_API_KEY=${facts.generated.key}`);
  } else {
    const tenants = facts.suppliedTenants.map((t) => `"${t}"`).join(', ');
    lines.push(
      `  API keys from VISION_DEV_API_KEYS for tenant${facts.suppliedTenants.length > 1 ? 's' : ''} ${tenants} (not printed)`,
    );
    lines.push('', `  export VISION_BASE_URL=${facts.baseUrl} VISION_API_KEY=…   # one of the keys you set`);
  }
  lines.push('', '');
  return lines.join('\n');
}
