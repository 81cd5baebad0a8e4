// Cross-language erasure (driven by tests/it/erasure_from_package.rs): the BUILT package's
// requestErasure and readErasure, as the API calls them with its own `mongodb` driver, against the
// database the Rust side completes the request in. argv[2]: a JSON object
//   {"action": "request" | "read", "uri", "database", "interviewIds": [hex], "organizationId": hex,
//    "requestedBy", "reason", "reference"}
// Prints one JSON line: {"records": [ErasureRecord]} for a request, {"record": ErasureRecord | null}
// for a read, or {"refused": {"name", "code", "field", "notInOrganization", "message"}} when the
// package refuses (ErasureInputError, ErasureRefusedError). Dates are ISO strings.
import { MongoClient, ObjectId } from "mongodb";
import {
  ERASURE_COLLECTIONS,
  ErasureInputError,
  ErasureRefusedError,
  INTERVIEWS_COLLECTION,
  readErasure,
  requestErasure,
} from "@sophia/async-jobs-client";

const input = JSON.parse(process.argv[2]);
const client = await new MongoClient(input.uri, { serverSelectionTimeoutMS: 10_000 }).connect();
try {
  const db = client.db(input.database);
  const objectId = (hex) => new ObjectId(hex);
  const erasures = db.collection(ERASURE_COLLECTIONS.erasures);
  let out;
  if (input.action === "read") {
    out = { record: await readErasure({ interviewId: input.interviewIds[0], erasures, objectId }) };
  } else {
    try {
      const records = await requestErasure({
        interviewIds: input.interviewIds,
        organizationId: input.organizationId,
        requestedBy: input.requestedBy,
        reason: input.reason,
        reference: input.reference,
        erasures,
        reports: db.collection(ERASURE_COLLECTIONS.reports),
        outbox: db.collection(ERASURE_COLLECTIONS.outbox),
        interviews: db.collection(INTERVIEWS_COLLECTION),
        objectId,
      });
      out = { records };
    } catch (e) {
      if (!(e instanceof ErasureInputError || e instanceof ErasureRefusedError)) throw e;
      out = { refused: { name: e.name, code: e.code, field: e.field ?? null, notInOrganization: e.notInOrganization ?? null, message: e.message } };
    }
  }
  console.log(JSON.stringify(out));
} finally {
  await client.close();
}
