// Python workers forked from one interpreter (a node host's fork server): each is a process of
// its own with the worker protocol, its output goes to its own log, a worker that dies ends
// alone with its exit reported, the next call gets a fresh fork, and a server that died is
// started again on the next fork.
import { expect } from 'chai';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PyForkServer } from '../../circe/invoke/py-forkserver.js';
import { PythonWorker } from '../../circe/invoke/python.js';

describe('circe python fork server', function () {
  this.timeout(30_000);
  let work: string;
  let server: PyForkServer;
  before(() => {
    work = mkdtempSync(join(tmpdir(), 'jupiter-pyfork-test-'));
    mkdirSync(join(work, 'scripts'));
    mkdirSync(join(work, 'out'));
    // `die` in the input: the worker ends itself, as a crashing task would.
    for (const t of ['a', 'b']) {
      writeFileSync(join(work, 'scripts', `${t}.py`), [
        'import os, sys',
        'def task(filename, pathin, pathout):',
        "    if filename == 'die':",
        '        os._exit(7)',
        `    print('${t} says hi', flush=True)`,
        `    out = os.path.join(pathout, filename + '.${t}')`,
        "    open(out, 'w').write(str(os.getpid()))",
        '    return out',
        '',
      ].join('\n'));
    }
    server = new PyForkServer();
  });
  after(async () => {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  });

  const worker = (t: string): PythonWorker => new PythonWorker(t, join(work, 'scripts', `${t}.py`), undefined, undefined, undefined, { server, stderrPath: join(work, `${t}.log`) });

  it('forks a worker per task: own pid, own log; a dying one ends alone and the next call gets a fresh one', async () => {
    const [a, b] = [worker('a'), worker('b')];
    await Promise.all([a.start(), b.start()]);
    expect(a.pid).to.be.a('number');
    expect(a.pid).to.not.equal(b.pid);
    const outA = await a.invoke('x', work, join(work, 'out'));
    expect(readFileSync(outA[0]!, 'utf8')).to.equal(String(a.pid));
    await b.invoke('y', work, join(work, 'out'));
    expect(readFileSync(join(work, 'a.log'), 'utf8')).to.contain('a says hi');
    expect(readFileSync(join(work, 'b.log'), 'utf8')).to.contain('b says hi').and.not.contain('a says');

    const first = a.pid;
    const err = await a.invoke('die', work, join(work, 'out')).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.equal('python worker of task a exited (code 7)');
    // b never noticed; a's next call runs in a new fork.
    await b.invoke('z', work, join(work, 'out'));
    const again = await a.invoke('w', work, join(work, 'out'));
    expect(Number(readFileSync(again[0]!, 'utf8'))).to.equal(a.pid).and.not.equal(first);
    await Promise.all([a.close(), b.close()]);
  });

  it('an import error is reported as such; a killed server is started again by the next fork', async () => {
    writeFileSync(join(work, 'scripts', 'bad.py'), 'import no_such_module_here\n');
    const bad = worker('bad');
    const err = await bad.start().then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/cannot import task bad .*ModuleNotFoundError/);

    const a = worker('a');
    await a.start();
    // The server's own pid: the parent of its workers.
    const serverPid = Number(readFileSync(`/proc/${a.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
    process.kill(serverPid, 'SIGKILL');
    // The worker forked before keeps serving; a new worker comes from a new server.
    await a.invoke('k', work, join(work, 'out'));
    const c = worker('b');
    await c.start();
    const newServer = Number(readFileSync(`/proc/${c.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
    expect(newServer).to.not.equal(serverPid);
    await c.invoke('m', work, join(work, 'out'));
    await Promise.all([a.close(), c.close()]);
  });

  it('without a working fork server a task still gets an interpreter of its own (and its log says why)', async () => {
    const broken = new PyForkServer('/nonexistent/python3');
    const log = join(work, 'fallback.log');
    writeFileSync(log, '');
    const fd = openSync(log, 'a');
    const w = new PythonWorker('a', join(work, 'scripts', 'a.py'), undefined, undefined, fd, { server: broken, stderrPath: log });
    try {
      const out = await w.invoke('f', work, join(work, 'out'));
      expect(readFileSync(out[0]!, 'utf8')).to.equal(String(w.pid));
      expect(readFileSync(log, 'utf8')).to.match(/python fork server unavailable .*starting an interpreter for task a/);
    } finally {
      await w.close();
      await broken.close();
      closeSync(fd);
    }
  });
});
