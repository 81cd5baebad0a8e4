/**
 * Stored types: what the MongoDB driver returns for a document, next to its wire (JSON) type.
 *
 * The generated `InterviewReportDocument` is the document's JSON form (the schema the Rust side
 * writes: ObjectIds as 24-hex strings, dates as ISO-8601 strings), what an API response or an
 * extended-JSON export carries. The driver returns BSON values instead: `ObjectId` objects and
 * `Date`s. {@link StoredInterviewReportDocument} is that shape, for
 * `db.collection<StoredInterviewReportDocument<ObjectId>>(REPORTS_COLLECTION)`. Which fields are
 * dates and ObjectIds is generated from the schema (src/generated/stored-fields.ts).
 */
import type { GenerationMetadata, InterviewReportDocument, RetryMark } from "./generated/interview-report-document";
import type { StoredFields } from "./generated/stored-fields";

/**
 * What the package needs of an ObjectId: the `mongodb` driver's `ObjectId` and Mongoose's
 * `Types.ObjectId` both fit; a string does not. Pass your driver's class as the type parameter
 * to get it back from reads.
 */
export interface ObjectIdLike {
  toHexString(): string;
}

type AsDate<T> = T extends string ? Date : T;
type AsObjectId<T, TObjectId> = T extends string ? TObjectId : T;
type StoredTypeName = keyof StoredFields;
/** A wire type `T` (stored type `N` of the schema) as the driver returns it: its dates `Date`s, its ObjectIds `TObjectId`, and the stored types it holds mapped the same way (generated: src/generated/stored-fields.ts). */
type Stored<T, N extends StoredTypeName, TObjectId> = {
  [K in keyof T]: K extends StoredFields[N]["dates"]
    ? AsDate<T[K]>
    : K extends StoredFields[N]["objectIds"]
      ? AsObjectId<T[K], TObjectId>
      : K extends keyof StoredFields[N]["nested"]
        ? StoredNested<T[K], StoredFields[N]["nested"][K], TObjectId>
        : T[K];
};
/** A field holding a stored type, a list of them, or `null` / absent. */
type StoredNested<V, N, TObjectId> = N extends StoredTypeName
  ? V extends readonly (infer E)[]
    ? Stored<E, N, TObjectId>[]
    : V extends object
      ? Stored<V, N, TObjectId>
      : V
  : V;

/** `generation` as stored: `generatedAt` a `Date`. */
export type StoredGenerationMetadata = Stored<GenerationMetadata, "GenerationMetadata", never>;

/** One attempts reset as stored (`lastRetry`, each of `retries`): `at` a `Date`. */
export type StoredRetryMark = Stored<RetryMark, "RetryMark", never>;

/**
 * One `interviewReports` document as the MongoDB driver returns it: ObjectIds (`_id`,
 * `interviewId`, `organizationId`, `leaseId`) as `TObjectId`, every date a `Date` (also inside
 * `generation`, `lastRetry` and `retries`), the rest as in the JSON form. Optional fields may be
 * absent or `null`. Every field a writer sets is in it: the Rust consumer's, the operator CLI's
 * and this package's admin retry (`lastRetry`, `retries`): the Rust type it is generated from
 * refuses any other field when it reads a document.
 *
 * ```ts
 * import { ObjectId } from "mongodb";
 * const reports = db.collection<StoredInterviewReportDocument<ObjectId>>(REPORTS_COLLECTION);
 * const report = await reports.findOne({ interviewId: new ObjectId(id) }); // report.createdAt: Date
 * ```
 */
export type StoredInterviewReportDocument<TObjectId extends ObjectIdLike = ObjectIdLike> = Stored<
  InterviewReportDocument,
  "InterviewReportDocument",
  TObjectId
>;

/** The fields of a stored report that the driver returns as `Date`s (from the schema). */
export type StoredReportDateField = StoredFields["InterviewReportDocument"]["dates"];
/** The fields of a stored report that the driver returns as ObjectIds (from the schema). */
export type StoredReportObjectIdField = StoredFields["InterviewReportDocument"]["objectIds"];
