/** Jest 30 + ts-jest, as a user of the original runs it. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: { module: 'commonjs', target: 'es2022', strict: true, esModuleInterop: true, skipLibCheck: true, types: ['node', 'jest'] } }],
  },
  testTimeout: 30000,
}
