import 'aws-sdk-client-mock-jest';

// The worker may OCR a page no provider read (evidence for grounding, shared/worker/grounding.ts) with the local
// provider's tesseract engine, whichever test drove it: stop the engine after each file, or its thread keeps Jest
// (which runs the files in one process on this machine) from ever exiting. Imported at the end: most files never
// load the provider.
afterAll(async () => {
  const { shutdownLocalProvider } = await import('../shared/providers/local/local-provider.js');
  await shutdownLocalProvider();
});
