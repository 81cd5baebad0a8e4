// The scratch API reads the reports the Rust consumer wrote, with its own mongodb driver, and
// checks them against the package's STORED type: every field the contract schema calls a
// date-time is a Date, every ObjectId-pattern field an ObjectId (top level and `generation`), as
// StoredInterviewReportDocument declares. argv[2]: a JSON array of interview ids. Configured by
// MONGODB_URI and MONGODB_DATABASE. Prints {"checked": n, "problems": [...]}. Driven by
// tests/it/typescript_contract.rs.
import { MongoClient, ObjectId } from "mongodb";
import { REPORTS_COLLECTION, schemas } from "@sophia/async-jobs-client";

const OBJECT_ID = "^[0-9a-fA-F]{24}$";
const doc = schemas["interview-report-document"];
const kinds = (props) => ({
  dates: Object.keys(props).filter((k) => props[k].format === "date-time"),
  ids: Object.keys(props).filter((k) => props[k].pattern === OBJECT_ID),
});
const top = kinds(doc.properties);
const generation = kinds(doc.$defs.GenerationMetadata.properties);

const ids = JSON.parse(process.argv[2] ?? "[]").map((h) => new ObjectId(h));
const client = await new MongoClient(process.env.MONGODB_URI).connect();
const problems = [];
let checked = 0;
try {
  const reports = await client.db(process.env.MONGODB_DATABASE).collection(REPORTS_COLLECTION).find({ interviewId: { $in: ids } }).toArray();
  for (const r of reports) {
    checked++;
    const check = (where, value, { dates, ids: oids }) => {
      for (const k of dates) if (value[k] != null && !(value[k] instanceof Date)) problems.push(`${where}.${k}: ${typeof value[k]}, not a Date`);
      for (const k of oids) if (value[k] != null && !(value[k] instanceof ObjectId)) problems.push(`${where}.${k}: ${typeof value[k]}, not an ObjectId`);
    };
    check(String(r.interviewId), r, top);
    if (r.generation) check(`${r.interviewId}.generation`, r.generation, generation);
    if (r.status === "COMPLETED" && !(r.generation?.generatedAt instanceof Date)) problems.push(`${r.interviewId}: a COMPLETED report without generation.generatedAt`);
  }
} finally {
  await client.close();
}
console.log(JSON.stringify({ checked, problems }));
