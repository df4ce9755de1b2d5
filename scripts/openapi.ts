/** Writes docs/openapi.json from the zod contract (`npm run openapi`). */
import { writeFileSync } from 'node:fs';
import { buildOpenApi } from '../shared/openapi.js';

const target = new URL('../docs/openapi.json', import.meta.url);
writeFileSync(target, `${JSON.stringify(buildOpenApi(), null, 2)}\n`);
process.stdout.write(`wrote ${target.pathname}\n`);
