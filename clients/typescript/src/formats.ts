/**
 * The string and number formats the contract schemas use, for the validators compiled ahead of
 * time (scripts/compile-validators.ts: the generated code reads `require("./formats").formats`, so the package
 * needs neither ajv nor ajv-formats at run time).
 *
 * - `date-time`: what the Rust consumers accept (sophia_contracts::Timestamp): RFC 3339 with an
 *   upper-case `T` and a time zone (`Z` or `+hh:mm`). Stricter than ajv-formats' `date-time`,
 *   which also takes a space, a lower-case `t` or `+hhmm`, all of which the consumer refuses.
 * - `int32`, `int64`: ajv-formats' definitions, unchanged (test/validate.test.ts compares them).
 *
 * Also {@link codePointLength}, the string length `maxLength` counts (ajv's run-time
 * `ucs2length`, which the compiled code would otherwise `require` from ajv).
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/;

export function isConsumerDateTime(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const zoneOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
  return (
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59 && zoneOk
  );
}

const MIN_INT32 = -(2 ** 31);
const MAX_INT32 = 2 ** 31 - 1;

export const formats = {
  "date-time": { type: "string", validate: isConsumerDateTime },
  int32: { type: "number", validate: (v: number) => Number.isInteger(v) && v <= MAX_INT32 && v >= MIN_INT32 },
  // JavaScript numbers are exact integers up to 2^53: any integer passes (as in ajv-formats).
  int64: { type: "number", validate: (v: number) => Number.isInteger(v) },
} as const;

/**
 * A string's length in Unicode code points, as JSON Schema's `maxLength` and the Rust consumers
 * (`chars().count()`) count it: a surrogate pair is one character, a lone surrogate one too.
 */
export function codePointLength(value: string): number {
  let length = 0;
  for (let i = 0; i < value.length; i++, length++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
  }
  return length;
}
