import { expect } from 'chai';
import { Redis } from 'ioredis';
import { runCli } from './support/cli.js';
import { startTestRedis } from './support/redis.js';

describe('foundation', () => {
  it('prints --version and exits 0', async () => {
    const r = await runCli(['--version']);
    expect(r.code).to.equal(0);
    expect(r.stdout.trim()).to.match(/^\d+\.\d+\.\d+$/);
  });

  it('exits 2 on an unknown command', async () => {
    const r = await runCli(['no-such-command']);
    expect(r.code).to.equal(2);
  });

  it('starts and stops a private redis-server', async () => {
    const redis = await startTestRedis();
    const client = new Redis(redis.url);
    expect(await client.ping()).to.equal('PONG');
    await client.quit();
    await redis.stop();
  });
});
