/**
 * What the console's pages (database, secrets, logs, billing) share: the one-time field of a form
 * that changes something and its POST side (lib/dashboard/once.ts: one effect per form), how a
 * stored value is shown (as text, bounded), and sizes for people.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { once, onceToken } from '../../lib/dashboard/once.js';
import { html, type Html } from './html.js';

/** The hidden one-time token of a form that changes something (beside its CSRF field). */
export function onceField(): Html {
  return html`<input type="hidden" name="_once" value="${onceToken()}">`;
}

/**
 * Runs a form's change once (the same form posted again changes nothing) and sends the person on
 * with 303: to where the change said, or, for a repeat, to the same place.
 */
export async function changeOnce(deps: AppDeps, req: Request, res: Response, projectId: string, change: () => Promise<string>): Promise<void> {
  const fields = (req.body ?? {}) as Record<string, unknown>;
  const { location } = await once(deps, projectId, { path: req.baseUrl + req.path, fields }, change);
  res.redirect(303, location);
}

/** The longest text a cell shows; the rest is cut with an ellipsis (the CSV has it whole). */
const CELL_CHARS = 300;

/** A stored value as the page shows it: always text (escaped by the `html` tag), NULL marked. */
export function cell(v: unknown): Html {
  if (v === null || v === undefined) return html`<span class="muted">NULL</span>`;
  const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return html`${text.length > CELL_CHARS ? `${text.slice(0, CELL_CHARS)}…` : text}`;
}

/** A value as a form field holds it (the text PostgreSQL parses for the column). */
export function fieldText(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export const count = (n: number) => n.toLocaleString('en-US');

/** A share of a quota as a meter with its words (the words carry it for screen readers). */
export function usage(label: string, used: number, max: number, show: (n: number) => string): Html {
  const pct = max > 0 ? Math.min(100, Math.round((used / max) * 100)) : 0;
  return html`<div class="usage"><span>${label}: ${show(used)} of ${show(max)} (${pct}%)</span> <meter min="0" max="${max}" value="${Math.min(used, max)}" aria-label="${label}: ${pct}% of the quota">${pct}%</meter></div>`;
}
