/**
 * Jest's node environment with the process's own typed-array constructors, as jest already does for Uint8Array and
 * ArrayBuffer: onnxruntime-node (the local OCR engine) creates its output tensors' arrays in the native realm and
 * checks them with `instanceof` against the constructors its JS half saw when it loaded, inside the test's vm.
 */
const { TestEnvironment } = require('jest-environment-node');

class NodeEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of [
      'Int8Array',
      'Uint8ClampedArray',
      'Int16Array',
      'Uint16Array',
      'Int32Array',
      'Uint32Array',
      'Float32Array',
      'Float64Array',
      'BigInt64Array',
      'BigUint64Array',
    ]) {
      this.global[name] = globalThis[name];
    }
  }
}

module.exports = NodeEnvironment;
