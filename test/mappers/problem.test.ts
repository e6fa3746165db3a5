import { expect } from 'chai';
import { isJupiterError } from '../../config/errors.js';
import { compile, linkFromDrupeMsKbit, problemErrors, simulate, validateProblem } from '../../mappers/index.js';
import { comm } from '../../mappers/compile.js';
import { topcuogluSample } from './samples.js';

function errorsOf(mutate: (p: Record<string, unknown>) => void): string[] {
  const p = JSON.parse(JSON.stringify(topcuogluSample())) as Record<string, unknown>;
  mutate(p);
  return problemErrors(p);
}

describe('mappers: Problem model', () => {
  it('accepts the sample problem', () => {
    expect(problemErrors(topcuogluSample())).to.deep.equal([]);
  });

  it('rejects bad problems with clear messages', () => {
    expect(errorsOf((p) => delete p.tasks)).to.deep.equal(["(top level): must have required property 'tasks'"]);
    expect(errorsOf((p) => ((p.edges as unknown[])[0] = { from: 'n1', to: 'nope', bytes: 1 })).join()).to.contain('/edges/0/to: unknown task "nope"');
    expect(errorsOf((p) => ((p.edges as unknown[])[0] = { from: 'n1', to: 'n2', bytes: -1 })).join()).to.contain('/edges/0/bytes: must be >= 0');
    expect(errorsOf((p) => (p.exec as Record<string, Record<string, number>>).n3!.p9 = 1).join()).to.contain('/exec/n3/p9: unknown node "p9"');
    expect(errorsOf((p) => ((p.exec as Record<string, unknown>).n3 = {})).join()).to.contain('task "n3" cannot run on any node');
    expect(errorsOf((p) => (p.edges as unknown[]).push({ from: 'n10', to: 'n1', bytes: 1 })).join()).to.match(/cycle: n1 -> .* -> n1/);
    expect(errorsOf((p) => delete p.defaultLink).join()).to.contain('/links: no link model for p1->p2');
    expect(errorsOf((p) => ((p.defaultLink as unknown) = { latencySec: 1 })).join()).to.contain('/defaultLink: a link model is either {a, b, c} or {latencySec, bandwidthBytesPerSec}');
    expect(errorsOf((p) => ((p as { extra?: number }).extra = 1)).join()).to.contain('unknown field "extra"');
    expect(errorsOf((p) => (p.tasks as string[]).push('n1')).join()).to.contain('task "n1" is listed twice');
  });

  it('validateProblem throws an input error (exit 2) naming the problem', () => {
    try {
      validateProblem({ tasks: [] });
      expect.fail('should throw');
    } catch (e) {
      expect(isJupiterError(e) && e.exitCode).to.equal(2);
      expect((e as Error).message).to.contain('invalid problem');
    }
  });

  it('converts DRUPE ms-vs-Kbit quadratics to seconds-vs-bytes', () => {
    // 1000 bytes = 8 Kbit; ms = 2*64 + 3*8 + 5 = 157 -> 0.157 s
    const q = linkFromDrupeMsKbit(2, 3, 5);
    expect(q.a * 1000 * 1000 + q.b * 1000 + q.c).to.be.closeTo(0.157, 1e-12);
  });

  it('same-node transfer is free and both link forms work', () => {
    const p = topcuogluSample();
    p.links = [{ from: 'p1', to: 'p2', model: { a: 1e-6, b: 0, c: 2 } }];
    const cp = compile(p);
    expect(comm(cp, 1000, 0, 0)).to.equal(0);
    expect(comm(cp, 1000, 0, 1)).to.be.closeTo(3, 1e-12);
    expect(comm(cp, 1000, 1, 0)).to.equal(1000);
  });

  it('simulate rejects impossible mappings as input errors', () => {
    const p = topcuogluSample();
    delete p.exec.n1!.p2;
    const mapping = Object.fromEntries(p.tasks.map((t) => [t, 'p2']));
    expect(() => simulate(p, mapping)).to.throw(/cannot run on node "p2"/);
    expect(() => simulate(p, { n1: 'p1' })).to.throw(/has no node/);
  });
});
