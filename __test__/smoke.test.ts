const native = require('../binding.js')

test('the addon loads', () => {
  expect(typeof native.kernelVersion()).toBe('string')
  const h = new native.CancelHandle()
  expect(h.cancelled).toBe(false)
  h.cancel()
  expect(h.cancelled).toBe(true)
})
