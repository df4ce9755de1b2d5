/**
 * zod/mini, set up the way classic `zod` sets itself up, for every module the API handlers load (see contract.ts for
 * why mini). Import zod from here, never from 'zod/mini' directly: this module's body runs before the importing
 * module's own, so the setup is in place before any schema is built or parsed, including those parsed at import
 * (config.ts's environment, pricing.json, the schema registry).
 */
import { config, memoizer } from 'zod/mini';
// The English messages (classic installs them itself; mini has none) keep INVALID_REQUEST `details` word for word.
// Imported alone: `z.locales` would bring every language into each bundle.
import en from 'zod/v4/locales/en.js';

config(en());
// Classic's default: cycle support in containers, and an object met twice in one parse is validated once.
// Without it mini would, in theory, parse such inputs differently; it costs ~3 KB per bundle.
config({ memoizer: memoizer() });

export * from 'zod/mini';
