/**
 * What the bench aims for, as ratios to a baseline measured in the same run (issue #36): each
 * section records its goals here and prints them as it goes; `npm run bench` ends with a table of
 * them all. A ratio is robust to the machine's speed and load, where an absolute figure is not.
 */
export interface Goal {
  /** P1 … P8, soak. */
  id: string;
  /** What is compared with what, e.g. "GET /v1/ping req/s vs bare Express". */
  what: string;
  /** The measured ratio (figure / baseline). */
  ratio: number;
  /** The goal: the ratio at least (`>=`) or at most (`<=`) this. */
  op: '>=' | '<=';
  target: number;
  /** The two figures the ratio comes from, for the reader. */
  detail: string;
}

const recorded: Goal[] = [];

export function isMet(g: Pick<Goal, 'ratio' | 'op' | 'target'>): boolean {
  return Number.isFinite(g.ratio) && (g.op === '>=' ? g.ratio >= g.target : g.ratio <= g.target);
}

/** A ratio as a percentage when the goal is one (≥ 25%), else as a factor (≤ 4×). */
function show(value: number, target: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return target < 1 || (target === 1 && value < 2) ? `${(value * 100).toFixed(1)}%` : `${value.toFixed(2)}×`;
}

/** Records a goal and prints its line: `P1 … = 72.4% (goal ≥ 70%) → met`. */
export function goal(g: Goal): void {
  recorded.push(g);
  console.log(`${g.id} ${g.what} = ${show(g.ratio, g.target)} (${g.detail}); goal ${g.op === '>=' ? '≥' : '≤'} ${show(g.target, g.target)} → ${isMet(g) ? 'met' : 'NOT met'}`);
}

/** The closing table of every goal recorded in this run. */
export function summary(load: string): string {
  if (recorded.length === 0) return '';
  const rows = [
    ['goal', 'what', 'ratio', 'target', 'result'],
    ...recorded.map((g) => [g.id, g.what, show(g.ratio, g.target), `${g.op === '>=' ? '≥' : '≤'} ${show(g.target, g.target)}`, isMet(g) ? 'met' : 'NOT met']),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const met = recorded.filter(isMet).length;
  return [
    `## summary: ${met} of ${recorded.length} goals met (ratios measured in this run; load average ${load})`,
    ...rows.map((r) => r.map((c, i) => (i <= 1 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')),
  ].join('\n');
}
