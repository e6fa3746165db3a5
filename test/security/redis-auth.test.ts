// Security: a Redis that requires authentication, reached through JUPITER_REDIS_URL — once with the
// default user's password (requirepass) and once with an ACL user. The whole deploy + stream works
// through the real CLI (agents started by hand, as on real nodes; the hub by the CLI), and the
// password appears nowhere: not in any CLI output (deploy, submit, status, status --json, logs,
// teardown), not in the runner, hub or agent logs, not in the hub's command line (any local user
// can read that), not in any Redis value. A wrong password fails with exit 1 and a masked URL.
// Related tests elsewhere: containers run as uid 10001 with all capabilities dropped and a
// read-only root (test/docker/sandbox.test.ts); output paths escaping pathout are refused
// (test/circe/invoke.test.ts); MQTT credentials never logged (test/faults/mqtt-down.test.ts).
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { cliPath } from '../support/paths.js';
import { CliSandbox, countDeliveries, pidAlive, printCounts, until, writeChainApp, writeItems } from '../support/faults.js';

const ADMIN_PW = 'Adm1n-pw-7c2e90';
const USER = 'jupiter-app';
const USER_PW = 'Us3r-pw-b81f44';
const PREFIX = 'jupiter:';
const N = 50;

/** Every string and hash value in Redis that holds `needle` (names of the keys). */
async function valuesHolding(redis: Redis, needle: string): Promise<string[]> {
  const hits: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 500);
    cursor = next;
    for (const k of keys) {
      const type = await redis.type(k);
      const text = type === 'string' ? await redis.get(k) : type === 'hash' ? JSON.stringify(await redis.hgetall(k)) : '';
      if (text?.includes(needle)) hits.push(k);
    }
  } while (cursor !== '0');
  return hits;
}

describe('security: Redis authentication through JUPITER_REDIS_URL (password and ACL user)', function () {
  this.timeout(240_000);
  let server: RedisServer;
  let admin: Redis;
  const dir = mkdtempSync(join(tmpdir(), 'jupiter-auth-redis-'));

  before(async () => {
    server = await new RedisServer({ dir, password: ADMIN_PW }).start();
    admin = connectRedis(server.url);
    await admin.call('ACL', 'SETUSER', USER, 'on', `>${USER_PW}`, '~*', '&*', '+@all');
  });
  after(async () => {
    admin?.disconnect();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const variants = [
    { name: 'default user with requirepass', app: 'authpw', secret: ADMIN_PW, url: () => server.url },
    { name: 'ACL user', app: 'authacl', secret: USER_PW, url: () => `redis://${USER}:${encodeURIComponent(USER_PW)}@127.0.0.1:${server.port}` },
  ];

  for (const v of variants) {
    it(`deploys and streams with the ${v.name}; the password is never shown or logged`, async () => {
      const box = new CliSandbox('jupiter-auth-', { JUPITER_REDIS_URL: v.url() });
      const agents: ChildProcess[] = [];
      try {
        // With a configured Redis, agents run on the nodes: start them here as an operator would.
        for (const node of ['node1', 'node2', 'node3']) {
          const fd = openSync(join(box.cwd, `agent-${node}.log`), 'a');
          agents.push(spawn(process.execPath, [cliPath, 'agent', '--node', node], { cwd: box.cwd, env: { ...process.env, ...box.env }, stdio: ['ignore', fd, fd] }));
          closeSync(fd);
        }
        const appDir = writeChainApp(box.cwd, v.app, { tasks: 3 });
        const files = writeItems(join(box.cwd, 'in'), N, 'a');
        const dep = JSON.parse((await box.ok(['deploy', appDir, '--runtime', 'process', '--wait', '--json'], { timeoutMs: 120_000 })).stdout) as { deployment: { outputDir: string } };
        const hubPid = box.stack().hub!.pid;
        expect(pidAlive(hubPid)).to.equal(true);
        const cmdline = readFileSync(`/proc/${hubPid}/cmdline`, 'utf8');
        await box.ok(['submit', v.app, ...files, '--wait']);
        await box.ok(['status', v.app]);
        await box.ok(['status', v.app, '--json']);
        const logs = await box.ok(['logs', v.app, 't0']);
        expect(logs.stdout).to.include('consuming queue t0');

        const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
        const c = await countDeliveries(admin, PREFIX, v.app, dep.deployment.outputDir, items.map((i) => `${i}_t2.txt`), ['0s_t2.txt']);
        printCounts(c);
        expect(c.lost).to.equal(0);
        expect(c.extraFiles).to.equal(0);
        const stored = await valuesHolding(admin, v.secret);

        // The runners log the URL they use, masked.
        const runnerLog = box.logs().find((l) => l.file.includes(join('apps', v.app, 't0@')));
        expect(runnerLog?.text).to.match(/Redis redis:\/\/[^\s]*:\*\*\*@127\.0\.0\.1/);
        await box.ok(['teardown', v.app, '--stack']);

        const texts = [
          ...box.transcript.map((r, i) => ({ file: `CLI call ${i + 1}`, text: r.stdout + r.stderr })),
          ...box.logs(),
          ...['node1', 'node2', 'node3'].map((n) => ({ file: `agent-${n}.log`, text: readFileSync(join(box.cwd, `agent-${n}.log`), 'utf8') })),
          { file: `/proc/${hubPid}/cmdline`, text: cmdline },
        ];
        console.log(`      checked ${texts.length} outputs and logs and ${await admin.dbsize()} Redis keys for the password`);
        for (const t of texts) expect(t.text, t.file).to.not.include(v.secret);
        expect(texts.filter((t) => t.file.endsWith('.log')).length).to.be.greaterThan(5);
        expect(stored).to.deep.equal([]);
      } finally {
        for (const a of agents) a.kill('SIGTERM');
        await until(() => agents.every((a) => a.exitCode !== null || a.signalCode !== null), 10_000, 'the agents to stop').catch(() => agents.forEach((a) => a.kill('SIGKILL')));
        await box.dispose();
      }
    });
  }

  it('a wrong password fails with exit 1 and a masked URL', async () => {
    const wrong = 'Wr0ng-pw-19ad';
    const box = new CliSandbox('jupiter-auth-', { JUPITER_REDIS_URL: `redis://${USER}:${wrong}@127.0.0.1:${server.port}` });
    try {
      const r = await box.run(['status']);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.include(`redis://${USER}:***@127.0.0.1:${server.port}`);
      expect(r.stderr).to.match(/WRONGPASS|NOAUTH|invalid username-password/i);
      expect(r.stdout + r.stderr).to.not.include(wrong);
      expect(existsSync(join(box.cwd, '.jupiter', 'stack.json'))).to.equal(false);
    } finally {
      await box.dispose();
    }
  });
});
