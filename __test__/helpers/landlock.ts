// The host check of the confined-shell suites: the cases that need Landlock's full policy run
// only on a kernel with the ABI the executor requires, and the skip is said once, with why.
import { ConfinedShellExecutor } from '../../index'

/** The host's probe, whether it has the full policy, and `test` or `test.skip` by that. */
export function landlockHost(suite: string) {
  const probe = ConfinedShellExecutor.probe()
  const full = probe.platform === 'linux' && probe.landlockAbi >= probe.requiredLandlockAbi
  if (!full) {
    // eslint-disable-next-line no-console
    console.warn(
      `${suite}: Landlock cases skipped: this host has Landlock ABI ${probe.landlockAbi} (${probe.platform}), the executor requires ${probe.requiredLandlockAbi}`,
    )
  }
  return { probe, full, withLandlock: full ? test : test.skip }
}
