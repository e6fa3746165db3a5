// Failure localisation from probe loss (after deTector's idea): every probe path crosses a
// known list of elements (nodes, links, switches); which paths lose packets tells which elements
// are at fault. Pure function, no I/O.
//
//  1. A path is lossy when its loss rate reaches `lossyAt` (a rate well above what the few
//     packets of a healthy path lose).
//  2. An element's hit ratio = lossy paths through it / probed paths through it. A broken
//     element makes every path through it lossy; a healthy one on a lossy path also carries
//     clean paths (with enough probe diversity), so only elements with a hit ratio >=
//     `minHitRatio` are suspects.
//  3. Greedy cover (the fewest elements that explain every lossy path): take the suspect that
//     explains the most unexplained lossy paths; ties go to the higher hit ratio, then to a link
//     over a node (the smaller component), and the equally good ones are reported as ambiguous.
//  4. An element's loss rate: the pooled loss of the lossy paths it alone explains.
// Loss here is what the path's probes see: for echo probes (there and back) a link dropping p in
// one direction shows loss p; dropping p both ways shows 1-(1-p)^2.

export interface PathObservation {
  from: string;
  to: string;
  sent: number;
  lost: number;
  /** Elements the path crosses; default: the two nodes and the direct link between them. */
  elements?: string[];
}

export interface Fault {
  kind: 'link' | 'node' | 'other';
  /** Element id: `node:<name>`, `link:<a>|<b>` (names sorted) or the caller's own ids. */
  element: string;
  /** The nodes of a node or link element. */
  nodes: string[];
  /** Estimated loss rate (0..1). */
  loss: number;
  /** The element drops (almost) everything. */
  dead: boolean;
  /** Lossy paths this element explains. */
  paths: number;
  hitRatio: number;
  /** Other elements that would explain exactly the same paths as well. */
  ambiguousWith: string[];
}

export interface LocaliseOptions {
  lossyAt?: number;
  minHitRatio?: number;
  /** A fault losing at least this much is reported dead. */
  deadAt?: number;
}

export const nodeElement = (n: string): string => `node:${n}`;
export const linkElement = (a: string, b: string): string => `link:${[a, b].sort().join('|')}`;

/** The default path of a probe between two nodes with a direct link. */
export const directPath = (from: string, to: string): string[] => [nodeElement(from), linkElement(from, to), nodeElement(to)];

function describe(element: string): Pick<Fault, 'kind' | 'nodes'> {
  if (element.startsWith('node:')) return { kind: 'node', nodes: [element.slice(5)] };
  if (element.startsWith('link:')) return { kind: 'link', nodes: element.slice(5).split('|') };
  return { kind: 'other', nodes: [] };
}

const rank = (kind: Fault['kind']): number => (kind === 'link' ? 0 : kind === 'other' ? 1 : 2);

export function localise(observations: PathObservation[], opts: LocaliseOptions = {}): Fault[] {
  const lossyAt = opts.lossyAt ?? 0.03;
  const minHit = opts.minHitRatio ?? 0.8;
  const deadAt = opts.deadAt ?? 0.95;
  const paths = observations
    .filter((o) => o.sent > 0)
    .map((o) => ({ ...o, elements: o.elements ?? directPath(o.from, o.to), rate: Math.min(1, o.lost / o.sent) }))
    .map((p) => ({ ...p, lossy: p.rate >= lossyAt }));
  const through = new Map<string, { all: number; lossy: number[] }>();
  paths.forEach((p, i) => {
    for (const e of new Set(p.elements)) {
      const t = through.get(e) ?? { all: 0, lossy: [] };
      t.all++;
      if (p.lossy) t.lossy.push(i);
      through.set(e, t);
    }
  });
  const hit = (e: string) => through.get(e)!.lossy.length / through.get(e)!.all;
  const suspects = [...through.keys()].filter((e) => through.get(e)!.lossy.length > 0 && hit(e) >= minHit);
  const unexplained = new Set(paths.flatMap((p, i) => (p.lossy ? [i] : [])));
  const chosen: Array<{ element: string; ambiguousWith: string[] }> = [];
  while (unexplained.size > 0) {
    const scored = suspects
      .filter((e) => !chosen.some((c) => c.element === e))
      .map((e) => ({ e, cover: through.get(e)!.lossy.filter((i) => unexplained.has(i)), hit: hit(e), kind: describe(e).kind }))
      .filter((s) => s.cover.length > 0)
      .sort((a, b) => b.cover.length - a.cover.length || b.hit - a.hit || rank(a.kind) - rank(b.kind) || a.e.localeCompare(b.e));
    const best = scored[0];
    if (!best) break; // lossy paths no suspect explains (noise spread thin): nothing to blame
    const key = best.cover.join(',');
    const ambiguousWith = scored
      .slice(1)
      .filter((s) => s.hit === best.hit && s.cover.length === best.cover.length && s.cover.join(',') === key)
      .map((s) => s.e);
    chosen.push({ element: best.e, ambiguousWith });
    for (const i of best.cover) unexplained.delete(i);
  }
  const chosenSet = new Set(chosen.map((c) => c.element));
  return chosen.map(({ element, ambiguousWith }) => {
    const own = through.get(element)!.lossy.map((i) => paths[i]!).filter((p) => p.elements.filter((e) => chosenSet.has(e)).length === 1);
    const pool = own.length > 0 ? own : through.get(element)!.lossy.map((i) => paths[i]!);
    const sent = pool.reduce((s, p) => s + p.sent, 0);
    const lost = pool.reduce((s, p) => s + p.lost, 0);
    const loss = sent > 0 ? lost / sent : 0;
    return { ...describe(element), element, loss, dead: loss >= deadAt, paths: through.get(element)!.lossy.length, hitRatio: hit(element), ambiguousWith };
  });
}
