/** Prisma 7 error shapes (see ../shared/STACK.md): a unique violation is P2002. */
export function isUniqueViolation(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: string }).code === 'P2002';
}
