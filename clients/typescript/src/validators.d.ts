/**
 * The contract's validators, compiled ahead of time by scripts/compile-validators.ts into
 * validators.js (next to this file in src/ and in dist/; generated at every build, never committed).
 */
import type { SchemaName } from "./generated/schemas";

export interface CompiledValidator {
  (data: unknown): boolean;
  errors?: { instancePath: string; keyword: string; message?: string; params: Record<string, unknown> }[] | null;
}

declare const validators: Record<SchemaName, CompiledValidator>;
export = validators;
