/**
 * The claim clause: a statement that takes due rows for one worker (`SELECT … LIMIT n` + this)
 * locks the rows it takes and passes over rows another worker holds, so two instances never take
 * one row and neither waits for the other. Spelled here only (scripts/check-transactions.ts), so a
 * move to an engine that spells it differently, or lacks it, has one line to change and a list of
 * its users (`grep -rn CLAIM_ROWS lib`).
 */
export const CLAIM_ROWS = 'FOR UPDATE SKIP LOCKED';
