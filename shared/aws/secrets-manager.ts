/** The Secrets Manager client, created once per process (the webhook secrets' key; shared/events/secrets.ts). */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

export const secretsManager = new SecretsManagerClient({});
