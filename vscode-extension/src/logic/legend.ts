// The legend of the line colours: what must / may / never mean, in the words of the analysis
// (the status bar item's hover, the CSI views' welcome text, the legend command).

import type { Scope } from './decorations';

export interface LegendEntry {
  /** Colour id contributed in package.json (the swatch). */
  colour: string;
  /** Default dark-theme colour, for the swatch in the hover. */
  swatch: string;
  name: string;
  meaning: string;
}

export const LEGEND: readonly LegendEntry[] = [
  {
    colour: 'csi.mustBackground',
    swatch: '#2ea043',
    name: 'must',
    meaning: 'ran before the crash in every execution consistent with the core (the stack, the path traces and the coverage bits)',
  },
  {
    colour: 'csi.mayBackground',
    swatch: '#d2a822',
    name: 'may',
    meaning: 'ran in some consistent executions and not in others: the evidence does not decide it',
  },
  {
    colour: 'csi.neverBackground',
    swatch: '#f85149',
    name: 'never',
    meaning: 'ran in no consistent execution: this code did not run before the crash',
  },
];

/** What the colours currently show. */
export function scopeText(scope: Scope): string {
  switch (scope) {
    case 'global':
      return 'Colours: the whole program (every thread and frame).';
    case 'local':
      return "Colours: the selected frame's own activation only.";
    case 'off':
      return 'Colours: off.';
  }
}

/** The legend as Markdown (HTML swatches; the status bar item's tooltip). */
export function legendMarkdown(scope: Scope): string {
  const rows = LEGEND.map(
    (e) => `<span style="background-color:${e.swatch};">&nbsp;&nbsp;&nbsp;&nbsp;</span> **${e.name}** — ${e.meaning}`,
  );
  return [
    '**CSI line colours** — which lines ran before the crash',
    '',
    ...rows.flatMap((r) => [r, '']),
    'A dashed left border: only part of the line decided (several statements, different answers).',
    'Blue box: the current path-trace step. Purple border: the lines of a slice. Lines without a colour have no code.',
    '',
    `${scopeText(scope)} *CSI: Toggle Line Colours* switches global / selected frame / off.`,
  ].join('\n');
}

/** The legend as plain text (a message's detail; editors without HTML hovers). */
export function legendText(scope: Scope): string {
  return [
    ...LEGEND.map((e) => `${e.name}: ${e.meaning}.`),
    'Dashed left border: only part of the line decided. Blue: the current path step. Purple: a slice.',
    scopeText(scope),
  ].join('\n');
}
