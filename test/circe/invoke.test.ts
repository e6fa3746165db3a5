import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInvoker } from '../../circe/invoke/invoker.js';
import { runHelper } from '../../circe/invoke/helper.js';
import { fixtureAppDir, specOf } from './support.js';
import { processCmdlines } from '../../orchestrator/testbed/procs.js';

describe('circe invoker', function () {
  this.timeout(20_000);
  let work: string;
  const dirs = (n: number): { pathin: string; pathout: string } => {
    const pathin = join(work, `i${n}`, 'input');
    const pathout = join(work, `i${n}`, 'output');
    mkdirSync(pathin, { recursive: true });
    mkdirSync(pathout, { recursive: true });
    return { pathin, pathout };
  };
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'jupiter-invoke-'));
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  const app = specOf(fixtureAppDir('pyjoin'));
  const task = (name: string) => app.tasks.find((t) => t.name === name)!;

  it('runs Python tasks in one persistent worker; task stdout does not corrupt the protocol', async () => {
    const inv = await createInvoker(app, task('left'));
    try {
      const pids = new Set<number>();
      for (let i = 1; i <= 3; i++) {
        const { pathin, pathout } = dirs(i);
        writeFileSync(join(pathin, `${i}x_split_left`), `item ${i}\n`);
        const out = await inv.invoke([`${i}x_split_left`], pathin, pathout);
        expect(out).to.have.length(1);
        const text = readFileSync(out[0]!, 'utf8');
        expect(text).to.match(new RegExp(`^item ${i}\\nleft pid=\\d+ in=${i}x_split_left\\n$`));
        pids.add(Number(/pid=(\d+)/.exec(text)![1]));
      }
      expect([...pids]).to.deep.equal([inv.pid]);
    } finally {
      await inv.close();
    }
  });

  it('passes a list of file names to Python joins and a str for one input', async () => {
    const inv = await createInvoker(app, task('merge'));
    try {
      const { pathin, pathout } = dirs(1);
      writeFileSync(join(pathin, '7_left'), 'L\n');
      writeFileSync(join(pathin, '7_right'), 'R\n');
      const out = await inv.invoke(['7_left', '7_right'], pathin, pathout);
      expect(readFileSync(out[0]!, 'utf8')).to.equal('L\nR\nmerge pid=' + inv.pid + ' in=7_left,7_right\n');
      // merge asserts it got a list: a single str fails with the Python error in the message
      await inv.invoke(['7_left'], pathin, pathout).then(() => expect.fail('should throw'), (e: Error) => expect(e.message).to.match(/AssertionError/));
    } finally {
      await inv.close();
    }
  });

  for (const [mode, pattern] of [
    ['ESCAPE', /outside its pathout/],
    ['ABSOLUTE', /outside its pathout/],
    ['SYMLINK', /link that leads outside its pathout/],
  ] as const) {
    it(`refuses output paths that escape pathout (${mode})`, async () => {
      const inv = await createInvoker(app, task('split'));
      try {
        const { pathin, pathout } = dirs(1);
        writeFileSync(join(pathin, '1a.txt'), mode);
        if (mode === 'ESCAPE') writeFileSync(join(pathout, '..', 'escaped'), 'x');
        const err = await inv.invoke(['1a.txt'], pathin, pathout).then(() => undefined, (e: Error) => e);
        expect(err?.name).to.equal('OutputPathError');
        expect(err?.message).to.match(pattern);
      } finally {
        await inv.close();
      }
    });
  }

  it('runs JavaScript (async, sync) and TypeScript tasks; relative outputs resolve in pathout', async () => {
    const js = specOf(fixtureAppDir('jsline'));
    const invs = await Promise.all(['a', 'b', 'c'].map((n) => createInvoker(js, js.tasks.find((t) => t.name === n)!)));
    try {
      let name = '1x.txt';
      let { pathin, pathout } = dirs(0);
      writeFileSync(join(pathin, name), 'x\n');
      for (const [i, inv] of invs.entries()) {
        const out = await inv.invoke([name], pathin, pathout);
        expect(out).to.have.length(1);
        const next = dirs(i + 1);
        name = out[0]!.split('/').pop()!;
        writeFileSync(join(next.pathin, name), readFileSync(out[0]!));
        ({ pathin, pathout } = next);
      }
      expect(name).to.equal('1x_c.txt');
      expect(readFileSync(join(pathin, name), 'utf8')).to.equal('x\na\nb\nc\n');
    } finally {
      await Promise.all(invs.map((i) => i.close()));
    }
  });

  it('reports a Python import error at creation', async () => {
    const dir = join(work, 'broken');
    mkdirSync(join(dir, 'scripts'), { recursive: true });
    writeFileSync(join(dir, 'scripts', 'bad.py'), 'import no_such_module_here\ndef task(f, i, o):\n    return []\n');
    const t = { ...task('left'), name: 'bad', scriptFile: join(dir, 'scripts', 'bad.py') };
    const err = await createInvoker(app, t).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/cannot import task bad.*ModuleNotFoundError/);
    // Its interpreter does not stay behind waiting for calls nobody will make.
    const left = (): number[] => processCmdlines().filter((p) => p.cmd.includes(join(dir, 'scripts'))).map((p) => p.pid);
    for (let i = 0; i < 50 && left().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(left()).to.deep.equal([]);
  });

  it('runs a non-DAG helper once with its arguments', async () => {
    const out = join(work, 'hello.txt');
    const code = await runHelper(task('hello'), { ...process.env, HELLO_OUT: out });
    expect(code).to.equal(0);
    expect(readFileSync(out, 'utf8')).to.equal('hello one 2\n');
    const err = await createInvoker(app, task('hello')).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/non-DAG helper/);
  });
});
