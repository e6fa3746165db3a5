// How the suite splits into lanes (test/support/lanes.ts): balanced, Docker files together, the
// network-emulation suites alone.
import { expect } from 'chai';
import { ALONE, balance, UNKNOWN_SEC } from '../support/lanes.js';

describe('test lanes (run-suite.ts)', () => {
  it('splits files into two lanes of about equal time, longest first', () => {
    const [a, b] = balance(['test/x/a.test.js', 'test/x/b.test.js', 'test/x/c.test.js', 'test/x/d.test.js'], {
      'test/x/a.test.js': 50, 'test/x/b.test.js': 30, 'test/x/c.test.js': 20, 'test/x/d.test.js': 10,
    });
    expect(a).to.deep.equal(['test/x/a.test.js', 'test/x/d.test.js']);
    expect(b).to.deep.equal(['test/x/b.test.js', 'test/x/c.test.js']);
  });

  it('keeps the files that start Docker engines in one lane', () => {
    const docker = ['test/docker/sandbox.test.js', 'test/e2e/private-dockerd.test.js', 'test/faults/kill-runner.test.js'];
    const [a, b] = balance([...docker, 'test/x/a.test.js', 'test/x/b.test.js'], { 'test/x/a.test.js': 40, 'test/x/b.test.js': 40 });
    const withDocker = a.includes(docker[0]!) ? a : b;
    expect(docker.every((f) => withDocker.includes(f))).to.equal(true);
    expect([...a, ...b].sort()).to.deep.equal([...docker, 'test/x/a.test.js', 'test/x/b.test.js'].sort());
  });

  it('weighs a file it has no time for as UNKNOWN_SEC; every file lands in exactly one lane', () => {
    const files = Array.from({ length: 9 }, (_, i) => `test/n/f${i}.test.js`);
    const [a, b] = balance(files, {});
    expect(a.length + b.length).to.equal(9);
    expect(Math.abs(a.length - b.length) * UNKNOWN_SEC).to.be.at.most(UNKNOWN_SEC);
  });

  it('runs the testbed and namespace suites alone', () => {
    expect(ALONE.test('test/testbed/testbed.test.js')).to.equal(true);
    expect(ALONE.test('test/profilers/netns.test.js')).to.equal(true);
    expect(ALONE.test('test/profilers/adapt-netns.test.js')).to.equal(true);
    expect(ALONE.test('test/profilers/netns-testbed.js')).to.equal(false);
    expect(ALONE.test('test/profilers/agents.test.js')).to.equal(false);
  });
});
