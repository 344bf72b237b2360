export function interleave<T extends { s: number }>(proofs: T[], shared: T[], workers: number): T[];
declare const LaneSequencer: unknown;
export default LaneSequencer;
