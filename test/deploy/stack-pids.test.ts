// Pids in the embedded stack's state file are checked before they are trusted: a service that died
// leaves its pid behind, and the kernel may give that pid to another process (pids wrap at 32,768
// on many machines). A process that started after the record was written is not the service.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readStackState } from '../../orchestrator/stack/state.js';
import { isAliveSince, processStartMs } from '../../circe/runtime/pid.js';
import { ownsPid } from '../../orchestrator/testbed/state.js';

describe('stack state: recorded pids that now belong to other processes', () => {
  let dir = '';
  let stranger: ChildProcess;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'jupiter-stack-pids-'));
    stranger = spawn('sleep', ['60'], { stdio: 'ignore' });
    await new Promise((r) => stranger.once('spawn', r));
  });

  after(() => {
    stranger.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the start time of a process from /proc', () => {
    const started = processStartMs(stranger.pid!)!;
    expect(started).to.be.a('number');
    // Whole seconds of the boot time and 10-ms ticks: within a few seconds of now.
    expect(Math.abs(Date.now() - started)).to.be.below(5000);
  });

  it('a pid whose process started after the record was written reads as 0; one started before is kept', () => {
    const hourAgo = Date.now() - 3600_000;
    const record = {
      redis: { pid: stranger.pid, startedAt: hourAgo, url: 'redis://127.0.0.1:1', port: 1 },
      hub: { pid: stranger.pid, startedAt: Date.now() + 1000, httpUrl: '', mqttUrl: '', mqttWsUrl: '' },
      agents: { node1: { pid: stranger.pid, startedAt: hourAgo, listen: '127.0.0.1:2' } },
    };
    writeFileSync(join(dir, 'stack.json'), JSON.stringify(record));
    const st = readStackState(dir);
    expect(st.redis!.pid).to.equal(0);
    expect(st.agents!.node1!.pid).to.equal(0);
    expect(st.hub!.pid).to.equal(stranger.pid);
    expect(st.redis!.url).to.equal('redis://127.0.0.1:1');
    expect(isAliveSince(stranger.pid, hourAgo)).to.equal(false);
    expect(isAliveSince(stranger.pid, undefined)).to.equal(true);
  });
});

describe("testbed state: the home's Redis and the engines are signalled only while their pid is theirs", () => {
  it('ownsPid: the recorded process (start time from /proc) yes; a process that started after the record, or a dead pid, no', async () => {
    const p = spawn('sleep', ['60'], { stdio: 'ignore' });
    await new Promise((r) => p.once('spawn', r));
    try {
      const startedAt = processStartMs(p.pid!)!;
      expect(ownsPid({ pid: p.pid!, startedAt })).to.equal(true);
      // The record is of a process that started a minute earlier: this one took its pid since.
      expect(ownsPid({ pid: p.pid!, startedAt: startedAt - 60_000 })).to.equal(false);
      // State files written before start times were recorded: alive is all that can be checked.
      expect(ownsPid({ pid: p.pid! })).to.equal(true);
    } finally {
      p.kill('SIGKILL');
      await new Promise((r) => p.once('exit', r));
    }
    expect(ownsPid({ pid: p.pid!, startedAt: Date.now() })).to.equal(false);
    expect(ownsPid(undefined)).to.equal(false);
  });
});
