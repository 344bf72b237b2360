/**
 * How deeply JSON input may nest, judged before anything walks it.
 *
 * Policy and why: JSON.parse builds a value of any depth without recursion, but much of what runs
 * after it recurses (JSON.stringify overflows the stack near 5,000 levels, validators and
 * serializers well before 200,000), and a stack overflow there is a 500 or a JSON-RPC -32603 that
 * says nothing useful. So a JSON request body of the API (`/v1`, `/admin`) and each MCP tool
 * argument may nest at most MAX_JSON_DEPTH levels of arrays and objects (`[]` and `{}` are one
 * level, `{"a":[1]}` two); deeper input is refused as the caller's error. No real request comes
 * near it: the deepest documents the API takes (a Flow's JSON, a table's jsonb) nest about 15.
 * The check is iterative, stops at the first value past the bound, and costs one pass over the
 * already size-bounded value.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` nests arrays and objects more than `max` levels deep. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: Array<{ v: object; depth: number }> = [{ v: value, depth: 1 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (depth > max) return true;
    const children: unknown[] = Array.isArray(v) ? v : Object.values(v);
    for (const child of children) {
      if (child !== null && typeof child === 'object') stack.push({ v: child, depth: depth + 1 });
    }
  }
  return false;
}
