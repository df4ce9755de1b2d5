/**
 * CDK entry point (cdk.json: `npx tsx bin/app.ts`). Stacks: VisionStateful-<stage> and VisionStateless-<stage>.
 * Account and region come from the CLI's credentials when there are any; without them the stacks are
 * environment-agnostic and still synthesize (offline).
 */
import { App } from 'aws-cdk-lib';
import { buildStacks } from '../lib/app.js';

const app = new App();
const account = process.env.CDK_DEFAULT_ACCOUNT;
const region = process.env.CDK_DEFAULT_REGION;
buildStacks(app, account || region ? { account, region } : undefined);
app.synth();
