#!/usr/bin/env python3
"""Reads the JUnit report of a schemathesis run (scripts/schemathesis.sh) and sorts its failures.

Every check is on, the positive-data check (ST202, "schema-valid request rejected") too: the served
document gives every parameter and body the schema the server really accepts. What remains of
ST202 is what no schema can say, each refusal documented with its 4xx answer in the document:

- an Idempotency-Key that schemathesis sent before with another request (which keys were used is
  state, not schema);
- a relationship naming an object that does not exist (which objects exist is state), and with it
  the count rule (`minCount`) of that relationship, which counts only the objects that exist;
- a predicate (`where`, `having`) that does not parse, or names a key path the entity lacks (a
  grammar, not a pattern);
- an `after` cursor the server did not make (a cursor is opaque);
- a base version given twice, differently (If-Match beside `_version` in the body: a schema
  cannot relate a header to a body);
- a transaction operation naming a ref that no earlier insert of the same transaction made (a
  schema cannot relate one array item to the ones before it).
- a fetch request template's `var.NAME` that is missing, belongs to another template of the
  entity, or is not a value of the type of the key path it meets (which variables a request
  needs, and their types, depend on the template `fetch=` names).

This prints how many failures fell in each of those and exits 0 when every failure is one of
them; any other failure (another check, or an ST202 of another kind) is printed whole and the
exit status is 1.
"""
import json
import re
import sys
import xml.etree.ElementTree as ElementTree

EXPECTED = [
    ("idempotency-key-reused", "an Idempotency-Key sent before with another request (state)"),
    ("missing-object", "a relationship naming an object that does not exist (state)"),
    ("predicate", "a predicate that does not parse or names no key path of the entity (grammar)"),
    ("cursor", "an `after` cursor the server did not make (opaque)"),
    ("version-twice", "If-Match and `_version` naming different versions (header beside body)"),
    ("unknown-ref", "a transaction's ref that no earlier insert made (items relate to items before them)"),
    ("template-variable", "a template's var.NAME missing, of another template, or not of its key path's type (depends on fetch=)"),
]


ERROR_ENTRY = re.compile(r'\{"object":"(?:[^"\\]|\\.)*","property":"((?:[^"\\]|\\.)*)","code":"([a-z-]+)","message":"((?:[^"\\]|\\.)*)"\}')


def problem_of(text):
    """The problem+json body a failure shows (between backticks), or None. A body schemathesis
    cut short ("// Output truncated...") is read as far as it goes: its code, and the validation
    errors shown whole."""
    match = re.search(r"`(\{.*\})`", text)
    if match:
        try:
            return json.loads(match.group(1))
        except json.JSONDecodeError:
            return None
    cut = re.search(r'`(\{"type":.*)// Output truncated', text)
    if not cut:
        return None
    code = re.search(r'"code":"([a-z-]+)"', cut.group(1))
    errors = [{"property": p, "code": c, "message": m} for p, c, m in ERROR_ENTRY.findall(cut.group(1))]
    return {"code": code.group(1) if code else None, "errors": errors, "detail": ""}


def request_of(text):
    match = re.search(r"^\s*(curl .*)$", text, re.MULTILINE)
    return match.group(1) if match else ""


def kind(check, text):
    """The expected kind of an ST202 failure, or None for any other failure."""
    if check != "ST202":
        return None
    problem = problem_of(text)
    if not isinstance(problem, dict):
        return None
    code, detail = problem.get("code"), problem.get("detail", "")
    request = request_of(text)
    if code == "idempotency-key-reused":
        return "idempotency-key-reused"
    if code == "validation":
        errors = problem.get("errors") or []
        missing = [e for e in errors if e.get("code") == "invalid-relationship" and "which does not exist" in e.get("message", "")]
        # A count rule broken because the objects named do not exist is the same state.
        counted = [e for e in errors if e.get("code") in ("too-small", "too-large") and e.get("property") in {m.get("property") for m in missing}]
        if missing and len(missing) + len(counted) == len(errors):
            return "missing-object"
        return None
    in_predicate = "where=" in request or "having=" in request
    if code == "invalid-predicate" and in_predicate:
        return "predicate"
    if code == "unknown-property" and in_predicate and detail.startswith("unknown key path"):
        return "predicate"
    if code == "bad-request" and detail.startswith("'after' is not a cursor this server made"):
        return "cursor"
    if code == "bad-request" and re.fullmatch(r"If-Match \(\d+\) and _version \(\d+\) disagree", detail):
        return "version-twice"
    if code == "bad-request" and "fetch=" in request and "variable" in problem:
        return "template-variable"
    if code == "bad-request" and "/v1/transactions" in request and re.fullmatch(r'operation \d+: ".*" is neither an object ID of this model nor an earlier ref', detail, re.DOTALL):
        return "unknown-ref"
    return None


def main(path):
    root = ElementTree.parse(path).getroot()
    counts = {name: 0 for name, _ in EXPECTED}
    unexpected = []
    for case in root.iter("testcase"):
        for failure in case:
            if failure.tag not in ("failure", "error"):
                continue
            text = failure.text or ""
            check = failure.attrib.get("message", "").split(" ")[0]
            found = kind(check, text)
            if found is None:
                unexpected.append((case.attrib.get("name", "?"), failure.attrib.get("message", ""), text))
            else:
                counts[found] += 1
    total = sum(counts.values())
    print(f"schemathesis: {total} schema-valid requests refused for what no schema can say:")
    for name, why in EXPECTED:
        print(f"  {counts[name]:4d}  {why}")
    if unexpected:
        print(f"schemathesis: {len(unexpected)} other failures:", file=sys.stderr)
        for name, message, text in unexpected:
            print(f"--- {name}: {message}\n{text}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
