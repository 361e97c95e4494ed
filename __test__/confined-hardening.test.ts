// The confined shell against the second round of attacks (issue 30 points 9-12), on real
// processes and real files: one private HOME/TMPDIR per sandbox root (an executor shared by two
// agents), System V IPC objects made outside, set-id files on every creation path and through the
// built-in file tools, and leftovers of a command that exited normally. Cases that need Landlock's
// full policy are skipped, with the reason printed, on a kernel below the ABI the executor requires.
import * as child_process from 'child_process'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { Agent, ConfinedShellExecutor, LocalShellExecutor, ToolExecutor, ToolRegistry, registerBuiltInTools } from '../index'
import type { AgentConfig, ShellExecOptions } from '../index'
import { alive, uniqueMarker, withMarker } from './helpers/procs'
import { resp, scripted, text } from './helpers/scripted'
import { landlockHost } from './helpers/landlock'

const { full, withLandlock } = landlockHost('confined-hardening')
// The system's python3 (a pyenv shim under a home directory is outside the read set).
const PY = '/usr/bin/python3'
const withPython = full && fs.existsSync(PY) ? test : test.skip
const withGit = full && child_process.spawnSync('git', ['--version']).status === 0 ? test : test.skip
const withPerl = full && fs.existsSync('/usr/bin/perl') ? test : test.skip

let base: string
beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-confined-hardening-')))
})
afterAll(() => fs.rmSync(base, { recursive: true, force: true }))

let seq = 0
/** A fresh sandbox root. */
function newRoot(name: string): string {
  const dir = path.join(base, `${name}-${seq++}`)
  fs.mkdirSync(dir)
  return dir
}
const opts = (root: string, extra: Partial<ShellExecOptions> = {}): ShellExecOptions => ({ timeoutMs: 20_000, sandboxRoot: root, ...extra })
const modeOf = (p: string) => fs.statSync(p).mode & 0o7777

/** One Agent run (root `cwd`) whose model makes the given tool calls one per turn; their outputs. */
async function agentRun(cwd: string, shellExecutor: ConfinedShellExecutor, calls: { name: string; input: Record<string, unknown> }[]): Promise<string[]> {
  const registry = new ToolRegistry()
  registerBuiltInTools(registry)
  const steps = calls.map((c, i) => resp([{ type: 'tool_use', id: `t${i}`, name: c.name, input: c.input }]))
  const agent = new Agent(
    {
      name: 'confined',
      model: 'm',
      tools: ['bash', 'file_write', 'file_edit'],
      cwd,
      shellExecutor,
      adapter: scripted([...steps, text('done')]),
    } as AgentConfig,
    registry,
    new ToolExecutor(registry),
  )
  const r = await agent.run('go')
  expect(r.success).toBe(true)
  expect(r.toolCalls.length).toBe(calls.length)
  return r.toolCalls.map((c) => c.output)
}
const bash = (command: string) => ({ name: 'bash', input: { command } })

// ---- point 9: a private home and temp dir per sandbox root ------------------------------------

describe('one private HOME and TMPDIR per sandbox root', () => {
  // Two agents sharing one executor: each bash call is an exec with its agent's cwd as the
  // sandbox root, on the executor both hold (a run-scoped lease keeps it started while either
  // runs; the calls are made directly here so that both agents' commands interleave).
  withGit("an executor shared by two agents: A's ~/.gitconfig (core.fsmonitor) never runs in B's root", async () => {
    const shell = new ConfinedShellExecutor()
    const [a, b] = [newRoot('agent-a'), newRoot('agent-b')]
    const pwned = path.join(b, 'pwned')
    // B has a repository with an index: `git status` there runs a configured fsmonitor.
    const setupB = await shell.exec('git init -q . && echo x > f && git add f && printf %s "$HOME"', opts(b))
    expect(setupB.exitCode).toBe(0)
    const homeB = setupB.stdout
    // Agent A plants the hook in its HOME, and tries B's private dir by path.
    // The hook runs in the repository's top directory: `touch pwned` marks where it ran.
    const planted = await shell.exec('git config --global core.fsmonitor "touch pwned" && printf %s "$HOME"', opts(a))
    const homeA = planted.stdout
    expect(planted.exitCode).toBe(0)
    expect(homeA).not.toBe(homeB)
    const other = await shell.exec(`echo '[core] fsmonitor = touch pwned' > ${homeB}/.gitconfig; ls ${homeB}`, opts(a))
    expect(other.stdout).toBe('')
    expect(other.stderr.match(/Permission denied/g)?.length).toBe(2)
    // Agent B works in its root: its git reads only its own (empty) home.
    const status = await shell.exec('git status --short; git config --global core.fsmonitor; echo "exit $?"; ls -A ~', opts(b))
    expect(status.stdout).toBe('A  f\nexit 1\n')
    expect(fs.existsSync(pwned)).toBe(false)
    // The vector is real: in a repository of A's own root, where A's home is the one read, the
    // hook runs.
    const own = await shell.exec('git init -q . && echo x > f && git add f && git status --short > /dev/null', opts(a))
    expect(own.exitCode).toBe(0)
    expect(fs.existsSync(path.join(a, 'pwned'))).toBe(true)
    // Each root keeps its dir across commands; dispose removes every one.
    expect((await shell.exec('echo "$HOME|$TMPDIR|$TMP|$TEMP"', opts(a))).stdout).toBe(`${homeA}|${homeA}|${homeA}|${homeA}\n`)
    expect(fs.existsSync(homeA) && fs.existsSync(homeB)).toBe(true)
    await shell.dispose()
    expect(fs.existsSync(homeA) || fs.existsSync(homeB)).toBe(false)
  })

  withLandlock("a root's temp dir is neither readable nor writable from another root", async () => {
    const shell = new ConfinedShellExecutor()
    const [a, b] = [newRoot('tmp-a'), newRoot('tmp-b')]
    const tmpA = (await shell.exec('echo secret-a > "$TMPDIR/s" && printf %s "$TMPDIR"', opts(a))).stdout
    const r = await shell.exec(`cat ${tmpA}/s; echo x > ${tmpA}/planted; ls ${path.dirname(tmpA)}`, opts(b))
    expect(r.stdout).toBe('')
    expect(r.stderr.match(/Permission denied/g)?.length).toBe(3)
    expect(fs.readdirSync(tmpA)).toEqual(['s'])
    await shell.dispose()
  })
})

// ---- point 10: System V IPC ----------------------------------------------------------------

describe('System V IPC', () => {
  withPerl('segments, queues and semaphores made outside are out of reach (ENOSYS), new ones cannot be made', async () => {
    const key = 0x6f6d0000 + (process.pid & 0xffff)
    const secret = `ipc-secret-${process.pid}`
    // Made outside the sandbox by the same uid, as another program would.
    const made = child_process.execFileSync(
      'perl',
      [
        '-e',
        `my $s = shmget(${key}, 64, 01600) // die "shmget: $!"; shmwrite($s, "${secret}", 0, ${secret.length}) or die "shmwrite: $!";
         my $q = msgget(${key}, 01600) // die "msgget: $!"; msgsnd($q, pack("l! a*", 1, "${secret}"), 0) or die "msgsnd: $!";
         my $m = semget(${key}, 1, 01600) // die "semget: $!"; print "$s $q $m"`,
      ],
      { encoding: 'utf8' },
    )
    const [shm, msq, sem] = made.split(' ')
    try {
      const shell = new ConfinedShellExecutor({ network: 'allow' })
      const root = newRoot('ipc')
      const attempts = [
        `my $s = shmget(${key}, 0, 0); print defined $s ? "shmget ok\\n" : "shmget: $!\\n"`,
        `shmread(${shm}, my $b, 0, ${secret.length}) ? print "read $b\\n" : print "shmread: $!\\n"`,
        `my $q = msgget(${key}, 0); print defined $q ? "msgget ok\\n" : "msgget: $!\\n"`,
        `msgrcv(${msq}, my $b, 64, 0, 04000) ? print "received $b\\n" : print "msgrcv: $!\\n"`,
        `my $m = semget(${key}, 0, 0); print defined $m ? "semget ok\\n" : "semget: $!\\n"`,
        `semop(${sem}, pack("s!3", 0, 1, 04000)) ? print "semop ok\\n" : print "semop: $!\\n"`,
        `my $s = shmget(0, 4096, 0600); print defined $s ? "private shmget ok\\n" : "private shmget: $!\\n"`,
      ]
      const r = await shell.exec(attempts.map((p) => `perl -e '${p}'`).join('; '), opts(root))
      expect(r.stderr).toBe('')
      expect(r.stdout).toBe(
        ['shmget', 'shmread', 'msgget', 'msgrcv', 'semget', 'semop', 'private shmget'].map((c) => `${c}: Function not implemented\n`).join(''),
      )
      expect(r.stdout).not.toContain(secret)
      await shell.dispose()
      // The queue still holds its message: nothing inside took it.
      const left = child_process.execFileSync('perl', ['-e', `msgrcv(${msq}, my $b, 64, 0, 04000) or die "msgrcv: $!"; print substr($b, length(pack("l!", 0)))`], {
        encoding: 'utf8',
      })
      expect(left).toBe(secret)
    } finally {
      child_process.execFileSync('perl', ['-e', `shmctl(${shm}, 0, 0); msgctl(${msq}, 0, 0); semctl(${sem}, 0, 0, 0)`])
    }
  })
})

// The same class: the kernel keyrings are found by id or description, not by path, and the
// user keyring is shared by every process of the uid.
describe('kernel keyrings', () => {
  const withX64Python = withPython === test && process.arch === 'x64' ? test : test.skip
  withX64Python("a key in the uid's user keyring made outside is out of reach (ENOSYS)", async () => {
    const desc = `oma-hardening-${process.pid}`
    // add_key 248, keyctl 250 (x86_64); KEY_SPEC_USER_KEYRING -4; KEYCTL_SEARCH 10, READ 11, UNLINK 9.
    const py = (body: string) => `import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n${body}\n`
    const key = child_process
      .execFileSync(PY, ['-c', py(`k = libc.syscall(248, b"user", b"${desc}", b"key-secret", 10, -4)\nprint(k if k > 0 else -ctypes.get_errno())`)], { encoding: 'utf8' })
      .trim()
    if (Number(key) <= 0) {
      // eslint-disable-next-line no-console
      console.warn(`confined-hardening: keyring case skipped: add_key failed here (${key})`)
      return
    }
    try {
      const shell = new ConfinedShellExecutor({ network: 'allow' })
      const root = newRoot('keys')
      fs.writeFileSync(
        path.join(root, 'keys.py'),
        py(`for what, r in (("search", lambda: libc.syscall(250, 10, -4, b"user", b"${desc}", 0)),
                 ("read", lambda: libc.syscall(250, 11, ${key}, ctypes.create_string_buffer(64), 64)),
                 ("add", lambda: libc.syscall(248, b"user", b"${desc}", b"x", 1, -4))):
    n = r()
    print(what, "ok" if n >= 0 else errno.errorcode[ctypes.get_errno()])`).replace('import ctypes, os', 'import ctypes, errno, os'),
      )
      const r = await shell.exec(`${PY} keys.py`, opts(root))
      expect([r.stdout, r.stderr]).toEqual(['search ENOSYS\nread ENOSYS\nadd ENOSYS\n', ''])
      await shell.dispose()
    } finally {
      child_process.execFileSync(PY, ['-c', py(`libc.syscall(250, 9, ${key}, -4)`)])
    }
  })
})

// ---- point 11: set-id files ----------------------------------------------------------------

describe('set-id files', () => {
  withPython('no creation path leaves a set-id file in the root', async () => {
    const shell = new ConfinedShellExecutor()
    const root = newRoot('setid')
    fs.writeFileSync(path.join(root, 'existing'), 'x')
    const cases: [string, string][] = [
      ['open-creat', `os.open("open-creat", os.O_CREAT | os.O_WRONLY, 0o4755)`],
      ['open-trunc', `os.open("existing", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o6755)`],
      ['openat', `os.open("openat", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o2755, dir_fd=os.open(".", os.O_RDONLY))`],
      ['mknod', `os.mknod("mknod", stat.S_IFREG | 0o4755)`],
      ['mknodat', `os.mknod("mknodat", stat.S_IFREG | 0o2711, dir_fd=os.open(".", os.O_RDONLY))`],
      ['tmpfile', `os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)`],
      ['chmod', `os.chmod("existing", 0o4755)`],
      // File capabilities are set-id's sibling: setting them needs CAP_SETFCAP, which is dropped.
      // (VFS_CAP_REVISION_2, CAP_SETUID permitted and effective.)
      ['setcap', `os.setxattr("existing", "security.capability", bytes.fromhex("01000002" "80000000" "00000000" "0000000000000000"))`],
    ]
    const script = cases
      .map(([name, call]) => `try:\n    ${call}\n    print("${name}: made")\nexcept OSError as e:\n    print("${name}: " + errno.errorcode[e.errno])`)
      .join('\n')
    fs.writeFileSync(path.join(root, 'attempt.py'), `import errno, os, stat\n${script}\n`)
    const r = await shell.exec(`${PY} attempt.py`, opts(root))
    expect(r.stderr).toBe('')
    expect(r.stdout).toBe(cases.map(([name]) => `${name}: EPERM\n`).join(''))
    for (const name of fs.readdirSync(root)) expect({ name, setid: modeOf(path.join(root, name)) & 0o6000 }).toEqual({ name, setid: 0 })
    expect(fs.existsSync(path.join(root, 'open-creat'))).toBe(false)
    // Plain modes still work on the same paths (a sticky bit on a file is harmless and allowed).
    const plain = await shell.exec(
      `${PY} -c 'import os, stat; os.close(os.open("p1", os.O_CREAT | os.O_WRONLY, 0o755)); os.mknod("p2", stat.S_IFREG | 0o644); os.open("existing", os.O_WRONLY, 0o4755)' && echo ok`,
      opts(root),
    )
    expect(plain.stdout).toBe('ok\n')
    expect([modeOf(path.join(root, 'p1')) & 0o777, modeOf(path.join(root, 'p2')) & 0o777]).toEqual([0o755 & ~process.umask(), 0o644 & ~process.umask()])
    await shell.dispose()
  })

  withLandlock('the file tools never carry a set-id or sticky bit over when they rewrite a file', async () => {
    const shell = new ConfinedShellExecutor()
    const root = newRoot('tools')
    // Set-id files in the root made outside the confinement (an older command, a checkout).
    const files: [string, number][] = [
      ['suid', 0o4755],
      ['sgid', 0o2755],
      ['both', 0o6711],
      ['sticky', 0o1644],
    ]
    for (const [name, mode] of files) {
      fs.writeFileSync(path.join(root, name), 'old\n')
      fs.chmodSync(path.join(root, name), mode)
    }
    const outputs = await agentRun(
      root,
      shell,
      files.flatMap(([name]) => [
        { name: 'file_write', input: { path: path.join(root, name), content: 'written\n' } },
        { name: 'file_edit', input: { path: path.join(root, name), old_string: 'written', new_string: 'edited' } },
      ]),
    )
    expect(outputs.map((o) => o.split(' ')[0])).toEqual(files.flatMap(() => ['Updated', 'Replaced']))
    for (const [name, mode] of files) {
      expect({ name, mode: modeOf(path.join(root, name)) }).toEqual({ name, mode: mode & 0o777 })
      expect(fs.readFileSync(path.join(root, name), 'utf8')).toBe('edited\n')
    }
    await shell.dispose()
  })
})

// ---- point 12: nothing outlives the command ---------------------------------------------------

describe('leftovers of a command that exited normally', () => {
  withLandlock('end when the command ends: background, setsid and nohup daemons, before exec returns', async () => {
    const shell = new ConfinedShellExecutor()
    const root = newRoot('leftovers')
    const m = uniqueMarker()
    // A daemon that would keep writing the root, one that setsid'd, one nohup'd; none holds the
    // output pipes, and the command exits 0 at once.
    const r = await shell.exec(
      `(setsid sh -c 'while :; do date > tick; sleep ${m}; done' > /dev/null 2>&1 &); nohup sleep ${m} > /dev/null 2>&1 & sleep ${m} > /dev/null 2>&1 & echo started`,
      opts(root),
    )
    expect([r.stdout, r.exitCode]).toEqual(['started\n', 0])
    // Killed before the result came back: nothing to wait for.
    expect(withMarker(m, true)).toEqual([])
    await shell.dispose()
  })

  withLandlock('through an agent: the next command sees none of them', async () => {
    const shell = new ConfinedShellExecutor()
    const root = newRoot('leftovers-agent')
    const m = uniqueMarker()
    const [first, second] = await agentRun(root, shell, [
      bash(`(setsid sleep ${m} > /dev/null 2>&1 &); echo started`),
      bash(`pgrep -f 'slee[p] ${m}' || echo none`),
    ])
    expect([first, second]).toEqual(['started\n', 'none\n'])
    expect(withMarker(m, true)).toEqual([])
  })

  test('LocalShellExecutor (unconfined) keeps them, as upstream: a daemon started with nohup or setsid outlives the command', async () => {
    if (process.platform !== 'linux') return
    const local = new LocalShellExecutor()
    const m = uniqueMarker()
    const r = await local.exec(`(setsid sleep ${m} > /dev/null 2>&1 &); echo started`, { timeoutMs: 20_000 })
    expect(r.stdout).toBe('started\n')
    // The setsid'd daemon is started before bash exits (the subshell forks it first), but may
    // not have exec'd sleep yet: wait for it by its marker.
    let pids: number[] = []
    for (let i = 0; i < 500 && (pids = withMarker(m, true)).length === 0; i++) await new Promise((res) => setTimeout(res, 10))
    try {
      expect(pids.length).toBe(1)
      expect(alive(pids[0])).toBe(true)
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGKILL')
    }
  })
})
