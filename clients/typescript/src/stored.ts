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
import type { GenerationMetadata, InterviewReportDocument } from "./generated/interview-report-document";
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
type Stored<T, F extends { dates: PropertyKey; objectIds: PropertyKey }, TObjectId> = {
  [K in keyof T]: K extends F["dates"] ? AsDate<T[K]> : K extends F["objectIds"] ? AsObjectId<T[K], TObjectId> : T[K];
};

/** `generation` as stored: `generatedAt` a `Date`. */
export type StoredGenerationMetadata = Stored<GenerationMetadata, StoredFields["GenerationMetadata"], never>;

/**
 * One `interviewReports` document as the MongoDB driver returns it: ObjectIds (`_id`,
 * `interviewId`, `organizationId`, `leaseId`) as `TObjectId`, every date a `Date`, the rest as in
 * the JSON form. Optional fields may be absent or `null`.
 *
 * ```ts
 * import { ObjectId } from "mongodb";
 * const reports = db.collection<StoredInterviewReportDocument<ObjectId>>(REPORTS_COLLECTION);
 * const report = await reports.findOne({ interviewId: new ObjectId(id) }); // report.createdAt: Date
 * ```
 */
export type StoredInterviewReportDocument<TObjectId extends ObjectIdLike = ObjectIdLike> = Omit<
  Stored<InterviewReportDocument, StoredFields["InterviewReportDocument"], TObjectId>,
  "generation"
> & {
  generation?: StoredGenerationMetadata | null;
};

/** The fields of a stored report that the driver returns as `Date`s (from the schema). */
export type StoredReportDateField = StoredFields["InterviewReportDocument"]["dates"];
/** The fields of a stored report that the driver returns as ObjectIds (from the schema). */
export type StoredReportObjectIdField = StoredFields["InterviewReportDocument"]["objectIds"];
