/** Small bounded containers: nothing in the simulator grows without a limit. */

/** Keeps the last `capacity` items. */
export class RingBuffer<T> {
  private items: (T | undefined)[];
  private start = 0;
  private len = 0;

  constructor(readonly capacity: number) {
    this.items = new Array(Math.max(1, capacity));
  }

  push(item: T): void {
    const cap = this.items.length;
    if (this.len < cap) {
      this.items[(this.start + this.len) % cap] = item;
      this.len++;
    } else {
      this.items[this.start] = item;
      this.start = (this.start + 1) % cap;
    }
  }

  /** Oldest first. */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.len; i++) out.push(this.items[(this.start + i) % this.items.length] as T);
    return out;
  }

  get size(): number {
    return this.len;
  }

  clear(): void {
    this.items = new Array(this.items.length);
    this.start = 0;
    this.len = 0;
  }
}

/**
 * A Map that forgets its oldest entries (by first insertion) beyond `max`. Eviction order is kept in
 * its own FIFO: asking a V8 Map for its first key after many deletions is not O(1).
 */
export class BoundedMap<K, V> extends Map<K, V> {
  private order = new Fifo<K>();

  constructor(
    readonly max: number,
    private readonly onEvict?: (key: K, value: V) => void,
  ) {
    super();
  }

  override set(key: K, value: V): this {
    if (!this.has(key)) {
      while (this.size >= this.max && this.order.length > 0) {
        const oldest = this.order.shift() as K;
        const v = this.get(oldest);
        if (v !== undefined || this.has(oldest)) {
          super.delete(oldest);
          this.onEvict?.(oldest, v as V);
        }
      }
      this.order.push(key);
      // Keys deleted by hand stay in the FIFO; compact it when it gets much longer than the map.
      if (this.order.length > 2 * this.max + 1024) this.order.retain((k) => this.has(k));
    }
    return super.set(key, value);
  }

  override clear(): void {
    this.order = new Fifo<K>();
    super.clear();
  }
}

/** Array-backed queue with O(1) amortized push/shift. */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined as never;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  retain(keep: (item: T) => boolean): void {
    this.items = this.items.slice(this.head).filter(keep);
    this.head = 0;
  }
}

/**
 * A FIFO of items that become due a fixed delay after insertion. One timer for the whole queue (the
 * head's), so thousands of pending items cost one small object each, not one timer each.
 */
export class DelayQueue<T> {
  private items: { due: number; item: T }[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;
  dropped = 0;

  constructor(
    public delayMs: number,
    private readonly onDue: (item: T) => void,
    private readonly max: number,
  ) {}

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): boolean {
    if (this.length >= this.max) {
      this.dropped++;
      return false;
    }
    this.items.push({ due: Date.now() + this.delayMs, item });
    if (!this.timer) this.arm();
    return true;
  }

  private arm(): void {
    if (this.length === 0) {
      this.timer = null;
      return;
    }
    const wait = Math.max(0, this.items[this.head].due - Date.now());
    this.timer = setTimeout(() => this.fire(), wait);
    this.timer.unref?.();
  }

  private fire(): void {
    const now = Date.now();
    while (this.head < this.items.length && this.items[this.head].due <= now) {
      const { item } = this.items[this.head];
      this.items[this.head] = undefined as never;
      this.head++;
      try {
        this.onDue(item);
      } catch {
        /* a failing consumer must not stop the queue */
      }
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.arm();
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.items = [];
    this.head = 0;
  }
}
