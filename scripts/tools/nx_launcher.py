"""Starts nx-27017 (a MongoDB wire-protocol server over SQLite) for tests and the local pipeline.

Two documented fixes over the stock entry point (see docs/testing.md, "The local MongoDB"), both in
neosqlite, the storage layer under nx-27017:
1. its SQL paths store a top-level `$set` of a BSON date as a string and of a bool as an int, and
   do not match ObjectId-valued fields by equality. Forcing its Python paths
   (`set_force_fallback(True)`) keeps the types and matches ObjectIds;
2. its Python matcher then drops explicit `null` leaves, so `{settledAt: null}` no longer matches
   a document that stores `settledAt: null` (MongoDB matches both null and missing). The patched
   `_iter_leaf_values` keeps `null` leaves;
3. its Python update path applies `$inc`, `$mul` and `$unset` to dotted paths as flat keys
   (`{"credits.available": 5}` at the top level instead of `credits.available`). The patched
   update rewrites dotted `$inc` / `$mul` into nested `$set`s of the computed values and unsets
   nested fields;
4. even in that mode, updates, deletes and counts still select documents with its SQL
   translation of the filter, which misses ObjectId-valued fields and is not reliable with
   `null`. The patched `translate_match` answers "not translatable" (its own signal for the
   Python fallback), so every filter is evaluated by one matcher, the Python one. So that this
   stays fast on large collections, a filter with a top-level `_id` equality or `$in` first
   narrows the rows by the indexed `_id` column, and one with a top-level ObjectId equality (e.g.
   `{interviewId: ...}`) to the rows whose JSON text contains that hex string (SQLite `instr`, a
   superset); the Python matcher still checks the whole filter.
`tests/it/mongo_wire_gaps.rs` shows what the flow relies on. Production code is not bent to the
server: this is test tooling only.

Usage: python nx_launcher.py --data-dir memory --host 127.0.0.1 -p PORT
"""
import copy
import os
import sys
import threading

from neosqlite.collection.query_helper import query_builder as _neosqlite_query_builder
from neosqlite.collection.query_helper import update_operations as _neosqlite_updates
from neosqlite.collection import cursor as _neosqlite_cursor
from neosqlite.collection.jsonb_support import json_data_column as _neosqlite_json_data_column
from neosqlite.sql_utils import quote_table_name as _neosqlite_quote
from neosqlite.collection import sql_translator_unified as _neosqlite_translator
from neosqlite.collection.query_helper import utils as _neosqlite_utils
from neosqlite.collection import datetime_query_processor as _neosqlite_datetime

_neosqlite_utils.set_force_fallback(True)


def _iter_leaf_values_keeping_null(document, parts):
    """neosqlite's `_iter_leaf_values`, except that an explicit null leaf is kept (so that
    `{field: null}` matches it, as in MongoDB)."""
    current = [document]
    for part in parts:
        nxt = []
        found = False
        for node in current:
            children = [node] if isinstance(node, dict) else [el for el in node if isinstance(el, dict)] if isinstance(node, list) else []
            for child in children:
                if part in child:
                    found = True
                    v = child[part]
                    if isinstance(v, list):
                        nxt.extend(v)
                    else:
                        nxt.append(v)
        if not found:
            return None
        current = nxt
    return current


_neosqlite_query_builder._iter_leaf_values = _iter_leaf_values_keeping_null


def _nested_get(doc, path):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _nested_unset(doc, path):
    *parents, leaf = path.split(".")
    cur = doc
    for part in parents:
        if not isinstance(cur, dict) or part not in cur:
            return
        cur = cur[part]
    if isinstance(cur, dict):
        cur.pop(leaf, None)


_original_python_update = _neosqlite_updates.UpdateOperationsMixin._perform_python_update


def _python_update_with_dotted_paths(self, doc_id, update_spec, original_doc, *args, **kwargs):
    spec = dict(update_spec)
    sets = dict(spec.get("$set", {}))
    for op, combine in (("$inc", lambda a, b: a + b), ("$mul", lambda a, b: a * b)):
        fields = spec.get(op)
        if not fields or not any("." in k for k in fields):
            continue
        for k, v in list(fields.items()):
            if "." in k:
                current = _nested_get(original_doc, k)
                sets[k] = combine(current if current is not None else 0, v)
        spec[op] = {k: v for k, v in fields.items() if "." not in k}
        if not spec[op]:
            del spec[op]
    if sets:
        spec["$set"] = sets
    unset = spec.get("$unset")
    dotted_unset = [k for k in (unset or {}) if "." in k]
    if dotted_unset:
        spec["$unset"] = {k: v for k, v in unset.items() if "." not in k}
        if not spec["$unset"]:
            del spec["$unset"]
    if dotted_unset:
        # The original applies the rest to a copy of `original_doc` and persists that copy.
        original_doc = copy.deepcopy(original_doc)
        for k in dotted_unset:
            _nested_unset(original_doc, k)
    return _original_python_update(self, doc_id, spec, original_doc, *args, **kwargs)


_neosqlite_updates.UpdateOperationsMixin._perform_python_update = _python_update_with_dotted_paths


def _no_sql_translation(self, match_spec, context="direct"):
    """`(None, [])` is neosqlite's signal to evaluate the filter in Python."""
    return None, []


_neosqlite_translator.SQLTranslator.translate_match = _no_sql_translation


def _id_prefilter(query):
    """A SQL prefilter on the `_id` column for `{_id: x}` / `{_id: {$in: [...]}}`, else None."""
    if not isinstance(query, dict) or "_id" not in query:
        return None
    wanted = query["_id"]
    if isinstance(wanted, dict):
        if set(wanted) != {"$in"} or not isinstance(wanted["$in"], list):
            return None
        values = wanted["$in"]
    else:
        values = [wanted]
    if not values or any(isinstance(v, (dict, list)) or v is None for v in values):
        return None
    return f" WHERE _id IN ({', '.join('?' for _ in values)})", tuple(str(v) for v in values)


def _is_object_id(value):
    """An ObjectId, or its 24-hex form (neosqlite hands filters on with ObjectIds as strings).

    Either way the stored JSON text of a matching document holds those 24 characters."""
    text = str(value) if type(value).__name__ == "ObjectId" or isinstance(value, str) else ""
    return len(text) == 24 and all(c in "0123456789abcdef" for c in text)


def _object_id_anchors(query):
    """Groups of ObjectId hex strings such that a matching document contains one of each group.

    Only conjunctive positions count: a top-level field equal to an ObjectId (also `$eq`, or
    `$in` of ObjectIds), and the same inside `$and`. Any document the filter matches stores those
    hex strings in its JSON text, so `instr` on the text is a safe superset test; the Python
    matcher still decides."""
    groups = []
    if not isinstance(query, dict):
        return groups
    for key, value in query.items():
        if key == "$and" and isinstance(value, list):
            for part in value:
                groups.extend(_object_id_anchors(part))
        elif key.startswith("$"):
            continue
        elif _is_object_id(value):
            groups.append([str(value)])
        elif isinstance(value, dict):
            if "$eq" in value and _is_object_id(value["$eq"]):
                groups.append([str(value["$eq"])])
            wanted = value.get("$in")
            if isinstance(wanted, list) and wanted and all(_is_object_id(v) for v in wanted):
                groups.append([str(v) for v in wanted])
    return groups


def _prefilter(query, data_column):
    """A SQL WHERE that keeps every row the filter can match (a superset), or None."""
    by_id = _id_prefilter(query)
    if by_id is not None:
        return by_id
    # A few anchors narrow enough; more would only lengthen the SQL.
    groups = _object_id_anchors(query)[:4]
    if not groups:
        return None
    clauses = [
        "(" + " OR ".join(f"instr({data_column}, ?) > 0" for _ in group) + ")" for group in groups
    ]
    return " WHERE " + " AND ".join(clauses), tuple(v for group in groups for v in group)


def _rows(collection, data_column, clauses, params):
    """`(id, _id, data)` rows of `collection` narrowed by the SQL `clauses` (WHERE, ORDER BY)."""
    return collection.db.execute(
        f"SELECT id, _id, {data_column} as data FROM {_neosqlite_quote(collection.name)}{clauses}", params
    ).fetchall()


def _python_fallback_by_id(self):
    jsonb = self._collection.query_engine.jsonb.jsonb_supported
    prefilter = _prefilter(self._filter, _neosqlite_json_data_column(jsonb))
    if prefilter is None or self._min or self._max:
        yield from _original_python_fallback(self)
        return
    where, params = prefilter
    sort_clause = self._query_helpers._build_sort_clause(self._sort, self._collation)
    if sort_clause:
        self._sql_handled_sort = True
    rows = _rows(self._collection, _neosqlite_json_data_column(jsonb), where + sort_clause, params)
    for doc in self._load_documents(rows):
        if self._query_helpers._apply_query(self._filter, doc):
            yield doc


_original_python_fallback = _neosqlite_cursor.Cursor._handle_python_fallback
_neosqlite_cursor.Cursor._handle_python_fallback = _python_fallback_by_id


def _datetime_python_tier_prefiltered(self, query):
    """Filters with a date (e.g. `leaseExpiresAt: {$lt: now}`) take this path, which loaded the
    whole collection; the same prefilter narrows the rows first."""
    data_column = _neosqlite_json_data_column(self.jsonb.jsonb_supported)
    prefilter = _prefilter(query, data_column)
    if prefilter is None:
        return _original_datetime_python_tier(self, query)
    where, params = prefilter
    rows = _rows(self.collection, data_column, where + " ORDER BY id", params)
    docs = (self.collection._load_with_stored_id(row[0], row[2], row[1]) for row in rows)
    return [doc for doc in docs if self.helpers._apply_query(query, doc)]


_original_datetime_python_tier = _neosqlite_datetime.DateTimeQueryProcessor._process_with_python_tier
_neosqlite_datetime.DateTimeQueryProcessor._process_with_python_tier = _datetime_python_tier_prefiltered

from nx_27017 import nx_27017  # noqa: E402  (must import after the switch)


def _exit_when_parent_goes_away() -> None:
    """With a stdin pipe from a harness: exit when it closes (the parent died or stopped us)."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    if os.environ.get("SOPHIA_EXIT_ON_STDIN_EOF") == "1":
        threading.Thread(target=_exit_when_parent_goes_away, daemon=True).start()
    if "--host" not in sys.argv:
        sys.argv += ["--host", "127.0.0.1"]
    code = nx_27017.main()
    # os._exit: the stdin watcher thread may hold stdin's lock, which would make a normal
    # interpreter shutdown abort.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)
