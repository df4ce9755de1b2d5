// Three projects so each kind of test can run alone (npm run test:unit|test:integration|test:infra).
// Sources are ESM TypeScript: @swc/jest strips types and keeps `import`, and jest runs with --experimental-vm-modules.
const common = {
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript' },
          target: 'es2022',
          experimental: { keepImportAttributes: true, emitAssertForImportAttributes: false },
        },
        module: { type: 'es6' },
      },
    ],
  },
  // Sources import './x.js' (NodeNext style); jest resolves that to the .ts file.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: '<rootDir>/test/support/node-environment.cjs',
  // `npm run synth` (which runs before the integration tests) leaves bundled assets with their own package.json in
  // cdk.out/; jest would index them and warn of a module name collision.
  modulePathIgnorePatterns: ['<rootDir>/cdk.out/', '<rootDir>/bench/results/'],
  setupFiles: ['<rootDir>/test/setup-env.ts'],
};

export default {
  // Integration tests run real OCR against real emulators: a run takes seconds, a redelivery waits out a
  // visibility timeout. (Jest reads testTimeout only from the global config, not per project.)
  testTimeout: 120_000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup-unit.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.ts',
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
    },
    { ...common, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    {
      ...common,
      // Black-box: HTTP only, so none of the service environment from test/setup-env.ts.
      setupFiles: [],
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/e2e/global-setup.ts',
      globalTeardown: '<rootDir>/test/e2e/global-teardown.ts',
    },
  ],
};
