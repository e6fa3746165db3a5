import { expect } from 'chai';
import { linkElement, localise, nodeElement, type PathObservation } from '../../profilers/faults/localise.js';

function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** Probe every directed pair with `n` echo packets; `drop(e)` gives each element's drop rate per crossing. */
function observe(paths: Array<{ from: string; to: string; elements: string[] }>, drop: (e: string) => number, rnd: () => number, n = 200, noise = 0.002): PathObservation[] {
  return paths.map((p) => {
    let lost = 0;
    for (let k = 0; k < n; k++) {
      const ok = p.elements.every((e) => rnd() >= drop(e)) && rnd() >= noise;
      if (!ok) lost++;
    }
    return { ...p, sent: n, lost };
  });
}

const mesh = (names: string[]) =>
  names.flatMap((a) => names.filter((b) => b !== a).map((b) => ({ from: a, to: b, elements: [nodeElement(a), linkElement(a, b), nodeElement(b)] })));

/** Two-tier tree: hosts under leaf switches under one core switch; paths cross every element on the way. */
function tree(leaves: number, perLeaf: number) {
  const hosts: Array<{ name: string; leaf: string }> = [];
  for (let l = 0; l < leaves; l++) for (let h = 0; h < perLeaf; h++) hosts.push({ name: `h${l}${h}`, leaf: `s${l}` });
  const up = (h: { name: string; leaf: string }) => [nodeElement(h.name), linkElement(h.name, h.leaf), `switch:${h.leaf}`];
  const paths = hosts.flatMap((a) =>
    hosts
      .filter((b) => b !== a)
      .map((b) => ({
        from: a.name,
        to: b.name,
        elements: a.leaf === b.leaf ? [...up(a), ...up(b).reverse().slice(1)] : [...up(a), linkElement(a.leaf, 'core'), 'switch:core', linkElement(b.leaf, 'core'), ...up(b).reverse()],
      })),
  );
  const links = [...new Set(paths.flatMap((p) => p.elements.filter((e) => e.startsWith('link:'))))];
  return { paths, links };
}

describe('profilers: failure localisation (faults/localise.ts)', () => {
  const names = ['n1', 'n2', 'n3', 'n4', 'n5'];

  it('no fault on a healthy network with a little noise', () => {
    expect(localise(observe(mesh(names), () => 0, prng(1)))).to.deep.equal([]);
  });

  it('a randomly chosen cut link is localised as that link, not a node (10 of 10 trials)', () => {
    const rnd = prng(42);
    const links = [...new Set(mesh(names).map((p) => p.elements[1]!))];
    let right = 0;
    for (let trial = 0; trial < 10; trial++) {
      const cut = links[Math.floor(rnd() * links.length)]!;
      const faults = localise(observe(mesh(names), (e) => (e === cut ? 1 : 0), rnd));
      if (faults.length === 1 && faults[0]!.element === cut && faults[0]!.kind === 'link' && faults[0]!.dead) right++;
    }
    expect(right).to.be.at.least(9);
  });

  it('a link with 10% random loss (one direction) is localised, loss within ±5 points (10 trials)', () => {
    const rnd = prng(7);
    const links = [...new Set(mesh(names).map((p) => p.elements[1]!))];
    for (let trial = 0; trial < 10; trial++) {
      const bad = links[Math.floor(rnd() * links.length)]!;
      // A link dropping 10% of its crossings: echo probes from either side lose about 10%.
      const faults = localise(observe(mesh(names), (e) => (e === bad ? 0.1 : 0), rnd));
      expect(faults).to.have.length(1);
      expect(faults[0]!.element).to.equal(bad);
      expect(faults[0]!.dead).to.equal(false);
      expect(faults[0]!.loss).to.be.closeTo(0.1, 0.05);
    }
  });

  it('a dead node is a node fault, not a set of links', () => {
    const faults = localise(observe(mesh(names), (e) => (e === nodeElement('n3') ? 1 : 0), prng(3)));
    expect(faults.map((f) => [f.kind, f.element, f.dead])).to.deep.equal([['node', 'node:n3', true]]);
  });

  it('two cut links at once are both found', () => {
    const cut = new Set([linkElement('n1', 'n2'), linkElement('n3', 'n5')]);
    const faults = localise(observe(mesh(names), (e) => (cut.has(e) ? 1 : 0), prng(5)));
    expect(new Set(faults.map((f) => f.element))).to.deep.equal(cut);
  });

  it('multi-hop paths (two-tier tree): any cut link is localised as that link (every link tried)', () => {
    const { paths, links } = tree(3, 3);
    const rnd = prng(11);
    for (const cut of links) {
      const faults = localise(observe(paths, (e) => (e === cut ? 1 : 0), rnd, 50));
      expect(faults.map((f) => f.element), cut).to.deep.equal([cut]);
      // a host's only access link looks exactly like the host itself: said so
      if (!cut.includes('core')) expect(faults[0]!.ambiguousWith.some((e) => e.startsWith('node:'))).to.equal(true);
    }
  });

  it('ignores paths with nothing sent', () => {
    expect(localise([{ from: 'a', to: 'b', sent: 0, lost: 0 }])).to.deep.equal([]);
  });
});
