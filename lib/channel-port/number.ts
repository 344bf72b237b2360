/** What the channel says of the sending number: its account's messaging limit and its throughput. */

export interface MessagingLimit {
  /** The channel's value as given (e.g. TIER_2K). */
  tier: string;
  /** Unique users per moving 24 hours; null for unlimited. */
  limit: number | null;
}

export interface Throughput {
  /** The channel's level as given (`STANDARD`, `HIGH`, or another value such as `NOT_APPLICABLE`). */
  level: string;
  coexistence: boolean;
  /** Messages per second it allows; null when the level is not one with a known rate. */
  messagesPerSecond: number | null;
}
