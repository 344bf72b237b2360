/** A build finding, in the user's source: a tree file, 1-based line and column. */
export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  message: string;
  /** `sample`: the new bundle failed on the deploy's sample message (lib/bot/deploy-trial.ts). */
  source: 'bundle' | 'typecheck' | 'startup' | 'sample';
}
