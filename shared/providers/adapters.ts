/** The worker's provider adapters by id. Only the worker imports this (it loads the heavy OCR/PDF libraries). */
import { localProvider } from './local/local-provider.js';
import type { ProviderAdapter, ProviderId } from './types.js';

export const adapters: Partial<Record<ProviderId, ProviderAdapter>> = { local: localProvider };
