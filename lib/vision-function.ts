/**
 * The house Lambda construct: every function of the service is a `VisionFunction`, so runtime, architecture,
 * bundling, tracing and log retention are decided once, here.
 *
 * Two packagings share those defaults:
 * - `zip` (every API handler): `NodejsFunction`, bundled by the locally installed esbuild during synth. Offline.
 * - `image` (the worker by default): a container image built by `cdk deploy`, see "Native modules" below.
 *
 * ## Native modules (the worker)
 * The worker needs sharp (a native addon), tesseract.js (+ its WASM core, a worker-thread script and the
 * @tesseract.js-data/eng model), mupdf (WASM loaded from a file next to its JS) and heic-convert. None of these
 * survive bundling, so they ship as real `node_modules` next to the bundle. Two ways to get them there:
 *
 * - `zip` + `bundling.nodeModules`: NodejsFunction writes a package.json with those packages, copies the lock file
 *   and runs `npm ci` in the asset directory *during synth*. That needs the npm registry at synth time (offline,
 *   `npm ci` fails with ENOTCACHED), and by default installs the binaries of the machine that synthesizes
 *   (linux-x64 here, darwin on a laptop) rather than Lambda's linux-arm64. `NPM_TARGET_ENVIRONMENT` below fixes
 *   the platform (checked: the asset then holds @img/sharp-linux-arm64, ~110 MB unzipped), but not the network:
 *   with this packaging `cdk synth` is no longer offline.
 * - `image` (default for the worker): synth only stages a small Docker build context (package.json, lock file,
 *   tsconfig, functions/, shared/, lib/worker-image/); `cdk deploy` builds it. The Dockerfile bundles the handler
 *   with the same esbuild options as the zip functions (`esbuildOptions`, but only the native packages external:
 *   the worker has no bundle-size target, so its image keeps the whole AWS credential chain, see
 *   ZIP_EXTERNAL_MODULES) and runs `npm ci --os=linux --cpu=arm64` for exactly the native packages at their
 *   lock-file versions, on the build platform (no QEMU needed), then copies both into
 *   the AWS Lambda Node.js 22 arm64 base image. Synth stays offline; deploy needs Docker (with buildx) and the
 *   network, which deploy needs anyway. Cost: a container image (ECR), slightly slower cold starts than a zip,
 *   and no `Runtime` property on the function (the image pins Node.js 22).
 *
 * The app picks the worker's packaging with the `workerPackaging` context value (`image` | `zip`).
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, Duration, IgnoreMode, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { HandlerName } from '../shared/infra/routes.js';

/** Repository root (this file lives in lib/). */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const NODE_RUNTIME = lambda.Runtime.NODEJS_22_X;
export const ARCHITECTURE = lambda.Architecture.ARM_64;
export const ESBUILD_TARGET = 'node22';

/**
 * Packages of the AWS SDK's default credential chain (`@aws-sdk/credential-provider-node`, bundled) that it loads only
 * through a dynamic `import()`, after the environment provider found no credentials: SSO, INI profiles (and through
 * them `credential-provider-login`, `token-providers` and the STS / SSO OIDC / sign-in clients of `nested-clients`),
 * `credential_process`, web identity, and the container / instance-metadata providers. About 107 KB of every bundle
 * with an AWS client, since esbuild inlines dynamically imported modules into the one output file. Checked in the SDK
 * sources at the versions in the lock file: `defaultProvider.js` and `remoteProvider.js` import them with
 * `await import(...)` only and no other module of any handler imports them; the benchmark reports an error for a
 * bundle that imports one of them any other way.
 */
export const SDK_LAZY_CREDENTIAL_MODULES = [
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/credential-provider-http',
  '@smithy/credential-provider-imds',
] as const;

/**
 * Modules the zip functions leave out of their bundle (esbuild `external`): only SDK_LAZY_CREDENTIAL_MODULES.
 *
 * The AWS SDK itself is bundled, not taken from the runtime, so the deployed code runs exactly the SDK version the
 * tests ran against (lib-dynamodb and the clients must match; shared/aws/s3-urls.ts signs with the SDK's own S3
 * presigner), whatever the runtime ships this month, and loads as one minified file. That includes the credential chain's eager
 * part, whose first link reads the environment: in Lambda the credentials are always there (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), so the lazily loaded providers are never reached and stay external. Were
 * one reached (say someone set AWS_PROFILE), its `import()` resolves from the SDK the Node.js 22 runtime ships (the
 * runtime searches NODE_PATH, /var/runtime/node_modules included, for ES modules since Node.js 18); the provider only
 * hands credentials back to the bundled client. Local runs (`npm start`, tests) use the sources and the full chain.
 *
 * `npm run bench` measures the variants: bundling everything (`sdk-bundled`, ~0.1 MB more per AWS handler) and
 * externalising all of `@aws-sdk/*` and `@smithy/*` (`sdk-external`: small bundles, but the SDK then loads from many
 * unminified files and cold imports get slower). Exported so the benchmark uses this list.
 */
export const ZIP_EXTERNAL_MODULES: readonly string[] = [...SDK_LAZY_CREDENTIAL_MODULES];

/** Packages the worker loads from node_modules instead of the bundle (native addons, WASM, data files). */
export const WORKER_NATIVE_MODULES = ['sharp', 'tesseract.js', '@tesseract.js-data/eng', 'mupdf', 'heic-convert'];

/**
 * Defines `require` inside the ESM bundle: esbuild turns `require()` calls of bundled CommonJS dependencies into a
 * shim that throws "Dynamic require is not supported" unless a real `require` exists at module scope.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __visionCreateRequire } from 'node:module'; const require = __visionCreateRequire(import.meta.url);";

/** npm settings that make `npm ci` pick Lambda's platform for optional native packages (npm >= 10.1). */
export const NPM_TARGET_ENVIRONMENT: Readonly<Record<string, string>> = {
  npm_config_os: 'linux',
  npm_config_cpu: 'arm64',
  npm_config_libc: 'glibc',
  // None of the native packages needs an install script (sharp ships prebuilt @img/* packages).
  npm_config_ignore_scripts: 'true',
};

/** The esbuild options of every function, as esbuild's JS API spells them (the worker image passes them through). */
export function esbuildOptions(externals: readonly string[]): Record<string, unknown> {
  return {
    bundle: true,
    platform: 'node',
    target: ESBUILD_TARGET,
    format: 'esm',
    mainFields: ['module', 'main'],
    banner: { js: ESM_REQUIRE_BANNER },
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    external: [...externals],
  };
}

/**
 * Repository folders copied next to a zip handler's bundle (read at run time). The dashboard handler serves the
 * static files of dashboard/ (shared/dashboard/assets.ts finds them beside the bundle).
 */
export const HANDLER_ASSET_DIRS: Partial<Record<HandlerName, readonly string[]>> = { dashboard: ['dashboard'] };

export type Packaging = 'zip' | 'image';

export interface VisionFunctionProps {
  /** Module in functions/ (its `handler` export is the entry point). */
  readonly handler: HandlerName;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default 10 seconds */
  readonly timeout?: Duration;
  readonly description?: string;
  /** Added to the defaults (NODE_OPTIONS); resource variables come from `bindAccess`. */
  readonly environment?: Readonly<Record<string, string>>;
  /** Packages shipped as node_modules instead of being bundled (see the file comment). */
  readonly nodeModules?: readonly string[];
  /** @default 'zip' */
  readonly packaging?: Packaging;
  /** What happens to the log group when the function leaves the stack. @default RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
}

export class VisionFunction extends Construct {
  readonly fn: lambda.Function;
  readonly logGroup: logs.LogGroup;
  readonly handlerName: HandlerName;

  constructor(scope: Construct, id: string, props: VisionFunctionProps) {
    super(scope, id);
    this.handlerName = props.handler;
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    const common = {
      architecture: ARCHITECTURE,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(10),
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
      description: props.description ?? `vision ${props.handler}`,
    } satisfies Partial<lambda.FunctionProps>;
    const nodeModules = [...(props.nodeModules ?? [])];
    const assetDirs = HANDLER_ASSET_DIRS[props.handler] ?? [];

    if ((props.packaging ?? 'zip') === 'image') {
      this.fn = new lambda.DockerImageFunction(this, 'Function', {
        ...common,
        code: workerImageCode(props.handler, nodeModules),
      });
      return;
    }

    this.fn = new NodejsFunction(this, 'Function', {
      ...common,
      entry: this.entryFor(props.handler),
      handler: 'handler',
      runtime: NODE_RUNTIME,
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      bundling: {
        format: OutputFormat.ESM,
        target: ESBUILD_TARGET,
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // See ZIP_EXTERNAL_MODULES: the AWS SDK is bundled, except the credential providers Lambda never reaches.
        externalModules: [...ZIP_EXTERNAL_MODULES],
        ...(nodeModules.length > 0 ? { nodeModules, environment: { ...NPM_TARGET_ENVIRONMENT } } : {}),
        ...(assetDirs.length > 0 ? { commandHooks: copyAfterBundling(assetDirs) } : {}),
      },
    });
  }

  /**
   * functions/<handler>.ts. When the file does not exist and this stack is not being bundled (tests set
   * `aws:cdk:bundling-stacks` to []), this file stands in so the template can still be checked; the code asset is a
   * placeholder then anyway. A real synth of a missing handler fails with a clear message.
   */
  private entryFor(handler: HandlerName): string {
    const entry = path.join(PROJECT_ROOT, 'functions', `${handler}.ts`);
    if (existsSync(entry)) return entry;
    if (Stack.of(this).bundlingRequired) {
      throw new Error(`functions/${handler}.ts does not exist; every handler in shared/infra/routes.ts needs one`);
    }
    Annotations.of(this).addWarningV2('vision:missing-handler', `functions/${handler}.ts is missing (not bundled)`);
    return fileURLToPath(import.meta.url);
  }
}

/** esbuild command hooks that copy repository folders into the bundle directory (runs on the synth machine). */
function copyAfterBundling(dirs: readonly string[]) {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir: string, outputDir: string) =>
      dirs.map((dir) => `cp -R "${path.join(inputDir, dir)}" "${path.join(outputDir, dir)}"`),
  };
}

/** Versions of `packages` as the project's package.json pins them (the lock file then decides exact versions). */
function dependencyVersions(packages: readonly string[]): Record<string, string> {
  const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const versions: Record<string, string> = {};
  for (const name of packages) {
    const version = pkg.dependencies?.[name];
    if (!version) throw new Error(`${name} must be a dependency in package.json to ship in node_modules`);
    versions[name] = version;
  }
  return versions;
}

/** Files of the repository the image build reads; anything else stays out of the context (and its hash). */
const IMAGE_CONTEXT_INCLUDES = ['package.json', 'package-lock.json', 'tsconfig.json', 'functions', 'shared', 'lib'];

function workerImageCode(handler: HandlerName, nodeModules: readonly string[]): lambda.DockerImageCode {
  return lambda.DockerImageCode.fromImageAsset(PROJECT_ROOT, {
    file: 'lib/worker-image/Dockerfile',
    platform: Platform.LINUX_ARM64,
    ignoreMode: IgnoreMode.DOCKER,
    exclude: ['*', ...IMAGE_CONTEXT_INCLUDES.map((p) => `!${p}`), 'lib/*', '!lib/worker-image', '**/*.test.ts'],
    buildArgs: {
      HANDLER: handler,
      ESBUILD_OPTIONS: JSON.stringify(esbuildOptions(nodeModules)),
      NODE_MODULES: JSON.stringify(dependencyVersions(nodeModules)),
    },
    cmd: ['index.handler'],
  });
}
