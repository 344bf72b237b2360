/** A build finding, in the user's source: a tree file, 1-based line and column. */
export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  message: string;
  source: 'bundle' | 'typecheck' | 'startup';
}
