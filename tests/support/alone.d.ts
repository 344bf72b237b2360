export type Lane = 'alone' | 'proof' | 'shared';
export function laneOf(pragmas: Record<string, unknown>, projectConfig?: { testEnvironmentOptions?: Record<string, unknown> }): Lane;
