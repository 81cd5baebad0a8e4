/**
 * Reading what the mocks recorded: secret wrappers and unknowns as the engine sees them, and the
 * value/known/secret triple of an Output.
 */
import * as pulumi from "@pulumi/pulumi";

import type { RecordedResource } from "./mocks";

/** Wire-format markers (pulumi/sdk/nodejs/runtime/rpc.ts). */
export const SPECIAL_SIG_KEY = "4dabf18193072939515e22adb298388d";
export const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** An unknown input as recorded by the mocks in a preview (pulumi's `unknown`), or the wire sentinel. */
export function isUnknown(v: unknown): boolean {
  return v === UNKNOWN || pulumi.isUnknown(v);
}

export function isSecretWrapper(v: unknown): v is { value: unknown } {
  return typeof v === "object" && v !== null && (v as Record<string, unknown>)[SPECIAL_SIG_KEY] === SECRET_SIG;
}

/** Removes secret wrappers (anywhere) so values can be compared. */
export function plain(v: unknown): unknown {
  if (isSecretWrapper(v)) return plain(v.value);
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === "object" && v !== null) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** The value at `path`, and whether any wrapper on the way (or the value itself) was a secret. */
export function at(obj: unknown, path: string[]): { value: unknown; secret: boolean } {
  let cur: unknown = obj;
  let secret = false;
  for (const key of path) {
    if (isSecretWrapper(cur)) {
      secret = true;
      cur = cur.value;
    }
    if (typeof cur !== "object" || cur === null) return { value: undefined, secret };
    cur = (cur as Record<string, unknown>)[key];
  }
  if (isSecretWrapper(cur)) return { value: plain(cur.value), secret: true };
  return { value: cur, secret };
}

/** Deep search for a string anywhere in a recorded value, outside secret wrappers. */
export function containsPlaintext(v: unknown, needle: string): boolean {
  if (isSecretWrapper(v)) return false;
  if (typeof v === "string") return v.includes(needle);
  if (Array.isArray(v)) return v.some((x) => containsPlaintext(x, needle));
  if (typeof v === "object" && v !== null) return Object.values(v).some((x) => containsPlaintext(x, needle));
  return false;
}

export function ofType(resources: RecordedResource[], type: string): RecordedResource[] {
  return resources.filter((r) => r.type === type);
}

export function byName(resources: RecordedResource[], type: string, physicalName: string): RecordedResource {
  const found = resources.filter((r) => r.type === type && plain(r.inputs["name"]) === physicalName);
  if (found.length !== 1) {
    throw new Error(`expected one ${type} named ${physicalName}, found ${found.length}`);
  }
  return found[0]!;
}

export interface Resolved<T> {
  value: T | undefined;
  known: boolean;
  secret: boolean;
}

/** Resolves an Output (internal `promise`/`isKnown`; `pulumi.isSecret` is public). */
export async function resolve<T>(o: pulumi.Output<T>): Promise<Resolved<T>> {
  const internal = o as unknown as { promise(withUnknowns?: boolean): Promise<T>; isKnown: Promise<boolean> };
  const [value, known, secret] = await Promise.all([internal.promise(true), internal.isKnown, pulumi.isSecret(o)]);
  return { value: known ? value : undefined, known, secret };
}
