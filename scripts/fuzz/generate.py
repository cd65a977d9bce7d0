"""Requests for the fuzzer: valid ones made from what the server answered so far (IDs,
versions, cursors), then mutated. Everything is drawn from one random.Random, so a seed
replays the same run against the same server build.

A request is first a Template (structured: method, path segments, query, headers, JSON body),
mutated at that level, then rendered to the client's dict form and maybe mutated as bytes.
"""
import base64
import urllib.parse

from values import (HOSTILE_NUMBERS, HOSTILE_STRINGS, IF_MATCH, INVALID_UTF8, OBJECT_IDS, OPERATORS, PREDICATE_KEYS,
                    PREDICATE_VALUES, VERSIONS, Dup, Raw, deep, dump, hostile_scalar)
from client import s

ENTITIES = ["Project", "Task", "Tag"]
ATTRIBUTES = {"Project": ["name", "archived"], "Task": ["title", "priority", "done", "estimate", "due"], "Tag": ["label"]}
RELATIONSHIPS = {"Project": {"tasks": ("Task", True)}, "Task": {"project": ("Project", False), "tags": ("Tag", True)},
                 "Tag": {"tasks": ("Task", True)}}
SORT_KEYS = {"Project": ["name", "archived", "name[c]"], "Task": ["title", "priority", "done", "estimate", "due", "project.name",
                                                                  "title[cd]", "project.archived"], "Tag": ["label", "label[c]"]}
INCLUDES = {"Project": ["tasks", "tasks.project", "tasks.tags", "tasks.tags.tasks"],
            "Task": ["project", "tags", "project.tasks", "tags.tasks", "project.tasks.tags"],
            "Tag": ["tasks", "tasks.project", "tasks.tags"]}
METHODS_ODD = ["HEAD", "OPTIONS", "TRACE", "PROPFIND", "get", "Get", "PATCH", "PUT", "DELETE", "POST", "CONNECT", "FOO",
               "M" * 300, "GET\x00", "G-T", "BREW", "QUERY", "LINK", "MKCOL"]
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", " application/json ",
                 "application/json;", "application/json; charset=latin-1", "application/merge-patch+json", "application/x-ndjson",
                 "text/plain", "", "application/", "/json", "application/json\t", "application/jsonx", "multipart/form-data; boundary=x",
                 "application/x-www-form-urlencoded", "application/problem+json", ";", "application/json, text/plain",
                 "application/json; " + "x" * 5000, "\x7f", "application/\u00e9json"]


class State:
    """What the server told us: live and deleted objects, their versions, fetch cursors."""

    def __init__(self):
        self.live = {e: [] for e in ENTITIES}
        self.deleted = {e: [] for e in ENTITIES}
        self.versions = {}
        self.cursors = []  # (entity, sort text, token)
        self.counter = 0

    def unique(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def some_id(self, rng, entity=None, allow_dead=True):
        entity = entity or rng.choice(ENTITIES)
        pool = list(self.live[entity])
        if allow_dead and self.deleted[entity] and rng.random() < 0.15:
            pool = self.deleted[entity]
        if not pool:
            return f"{entity}/{rng.randint(1, 5)}"
        return f"{entity}/{rng.choice(pool[-50:])}"

    def _add(self, oid, version=None):
        entity, _, pk = oid.partition("/")
        if entity not in self.live or not pk.isdigit():
            return
        pk = int(pk)
        if pk not in self.live[entity]:
            self.live[entity].append(pk)
            if len(self.live[entity]) > 400:
                del self.live[entity][:100]
        if version is not None:
            self.versions[oid] = version

    def _remove(self, oid):
        entity, _, pk = oid.partition("/")
        if entity in self.live and pk.isdigit() and int(pk) in self.live[entity]:
            self.live[entity].remove(int(pk))
            self.deleted[entity].append(int(pk))
            del self.deleted[entity][:-100]

    def observe(self, request, response):
        """Learns IDs, versions and cursors from a 2xx answer."""
        if response.status is None or not 200 <= response.status < 300:
            return
        if response.status == 204 and request.get("method") == "DELETE":
            path = request["target"].split("?")[0].split("/")
            if len(path) == 5:
                self._remove(f"{path[3]}/{path[4]}")
            return
        data = response.json()
        if not isinstance(data, dict):
            return
        if isinstance(data.get("_id"), str):
            self._add(data["_id"], data.get("_version"))
        for obj in data.get("objects") or []:
            if isinstance(obj, dict) and isinstance(obj.get("_id"), str):
                if obj.get("_deleted"):
                    self._remove(obj["_id"])
                else:
                    self._add(obj["_id"], obj.get("_version"))
        nxt = data.get("next")
        if isinstance(nxt, str) and request.get("method") == "GET":
            path, _, query = request["target"].partition("?")
            entity = path.split("/")[3] if path.count("/") >= 3 else "Task"
            sort = dict(urllib.parse.parse_qsl(query)).get("sort", "")
            self.cursors.append((entity, sort, nxt))
            del self.cursors[:-60]


class Template:
    def __init__(self, method, segments, query=None, headers=None, body=None, what="", kind=""):
        self.method = method
        self.segments = list(segments)      # path segments after the leading slash, already URL text
        self.query = list(query or [])      # (name, value) str pairs, percent-encoded on render
        self.headers = list(headers or [])  # (name, value)
        self.body = body                    # a JSON value (values.dump), or bytes, or None
        self.what = what
        self.kind = kind
        self.raw_query = None               # replaces the rendered query text when set
        self.length = None
        self.chunked = False

    def render(self):
        path = "/" + "/".join(self.segments)
        if self.raw_query is not None:
            query = self.raw_query
        else:
            query = "&".join(_enc(k) + ("=" + _enc(v) if v is not None else "") for k, v in self.query)
        target = path + ("?" + query if query else "")
        body = self.body
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = dump(body)
        request = {"method": _bytes_text(self.method), "target": _bytes_text(target),
                   "headers": [[_bytes_text(k), _bytes_text(v)] for k, v in self.headers],
                   "body": s(bytes(body)) if body is not None else None, "what": self.what}
        if self.length is not None:
            request["length"] = self.length
        if self.chunked:
            request["chunked"] = True
        return request


def _enc(text):
    if isinstance(text, bytes):
        return urllib.parse.quote_from_bytes(text, safe="")
    return urllib.parse.quote(text, safe="", encoding="utf-8", errors="surrogatepass")


def _bytes_text(text):
    """`text` as the latin-1 form of bytes: unchanged when it already is, else its UTF-8 bytes."""
    return text if all(ord(c) < 256 for c in text) else _latin(text)


def _latin(text):
    """A str that may hold any code point, as the latin-1 form of its UTF-8 bytes (for headers and targets)."""
    return s(text.encode("utf-8", "surrogatepass"))


JSON_HEADERS = [("Content-Type", "application/json")]


class Generator:
    def __init__(self, rng, state):
        self.rng = rng
        self.state = state

    # MARK: valid requests

    def values(self, entity, full=True):
        r, st = self.rng, self.state
        if entity == "Project":
            v = {"name": st.unique(r.choice(["Apollo ", "Gemini ", "Ω ", "p"]))}
            if r.random() < 0.5:
                v["archived"] = r.random() < 0.5
            if r.random() < 0.3:
                v["tasks"] = [st.some_id(r, "Task", allow_dead=False) for _ in range(r.randint(0, 3))]
        elif entity == "Task":
            v = {"title": st.unique(r.choice(["Launch ", "design ", "a" * 12, "Ünïcode ", "t"]))}
            if full or r.random() < 0.5:
                v["priority"] = r.randint(0, 5)
            if r.random() < 0.5:
                v["done"] = r.random() < 0.5
            if r.random() < 0.5:
                v["estimate"] = r.choice([0.5, 1, 2.25, None, 1e10])
            if r.random() < 0.4:
                v["due"] = r.choice(["2024-05-01T12:00:00.000Z", "2025-01-01T00:00:00Z", None])
            if r.random() < 0.6:
                v["project"] = st.some_id(r, "Project", allow_dead=False) if st.live["Project"] else None
            if r.random() < 0.5 and st.live["Tag"]:
                v["tags"] = sorted({st.some_id(r, "Tag", allow_dead=False) for _ in range(r.randint(0, 3))})
        else:
            v = {"label": st.unique(r.choice(["urgent", "bug", "ℓ", "x"]))}
            if r.random() < 0.2 and st.live["Task"]:
                v["tasks"] = [st.some_id(r, "Task", allow_dead=False)]
        return v

    def t_insert(self):
        entity = self.rng.choice(["Task", "Task", "Project", "Tag"])
        return Template("POST", ["v1", "objects", entity], headers=JSON_HEADERS, body=self.values(entity), what=f"insert {entity}",
                        kind="insert")

    def t_transaction(self):
        r, st = self.rng, self.state
        ops = []
        refs = []
        for _ in range(r.randint(1, 6)):
            choice = r.random()
            if choice < 0.55 or not any(st.live.values()):
                entity = r.choice(ENTITIES)
                values = self.values(entity, full=False)
                if entity == "Task" and refs and r.random() < 0.6:
                    projects = [ref for ref, e in refs if e == "Project"]
                    tags = [ref for ref, e in refs if e == "Tag"]
                    if projects:
                        values["project"] = r.choice(projects)
                    if tags:
                        values["tags"] = tags[:2]
                ref = f"t{len(ops) + 1}"
                op = {"op": "insert", "entity": entity, "ref": ref, "values": values}
                refs.append((ref, entity))
            elif choice < 0.85:
                if refs and r.random() < 0.3:
                    target, entity = r.choice(refs)
                    op = {"op": "update", "object": target, "values": self._some_update(entity)}
                else:
                    entity = r.choice([e for e in ENTITIES if st.live[e]] or ["Task"])
                    target = st.some_id(r, entity)
                    op = {"op": "update", "object": target, "values": self._some_update(entity)}
                    if target in st.versions and r.random() < 0.7:
                        op["version"] = st.versions[target]
            else:
                entity = r.choice(["Task", "Task", "Tag", "Project"])
                target = st.some_id(r, entity)
                op = {"op": "delete", "object": target}
                if target in st.versions and r.random() < 0.5:
                    op["version"] = st.versions[target]
            ops.append(op)
        query = [("merge", "error")] if r.random() < 0.2 else []
        return Template("POST", ["v1", "transactions"], query=query, headers=JSON_HEADERS, body={"operations": ops},
                        what="transaction", kind="transaction")

    def _some_update(self, entity):
        r = self.rng
        full = self.values(entity, full=False)
        keys = r.sample(sorted(full), k=r.randint(1, len(full)))
        return {k: full[k] for k in keys}

    def t_fetch(self):
        r, st = self.rng, self.state
        entity = r.choice(ENTITIES + ["Task"])
        query = []
        if r.random() < 0.6:
            query.append(("where", self.predicate(entity, valid=r.random() < 0.7)))
        sort = None
        if r.random() < 0.5:
            keys = r.sample(SORT_KEYS[entity], k=r.randint(1, 2))
            sort = ",".join(("-" if r.random() < 0.4 else "") + k for k in keys)
            query.append(("sort", sort))
        if r.random() < 0.5:
            query.append(("limit", str(r.choice([1, 2, 3, 10, 100, 1000]))))
        if r.random() < 0.2:
            query.append(("offset", str(r.choice([0, 1, 5, 100]))))
        if r.random() < 0.3:
            mine = [c for c in st.cursors if c[0] == entity and (c[1] == (sort or ""))]
            if mine:
                query.append(("after", r.choice(mine)[2]))
        if r.random() < 0.3:
            query.append(("fields", ",".join(r.sample(ATTRIBUTES[entity] + list(RELATIONSHIPS[entity]), k=r.randint(1, 2)))))
        if r.random() < 0.3:
            query.append(("include", r.choice(INCLUDES[entity])))
        if r.random() < 0.3:
            query.append(("count", r.choice(["true", "false", "1", ""])))
        r.shuffle(query)
        return Template("GET", ["v1", "objects", entity], query=query, what=f"fetch {entity}", kind="fetch")

    def t_get(self):
        r = self.rng
        entity = r.choice(ENTITIES)
        oid = self.state.some_id(r, entity)
        query = []
        if r.random() < 0.3:
            query.append(("include", r.choice(INCLUDES[entity])))
        if r.random() < 0.3:
            query.append(("fields", r.choice(ATTRIBUTES[entity] + list(RELATIONSHIPS[entity]))))
        return Template(r.choice(["GET", "GET", "GET", "HEAD"]), ["v1", "objects"] + oid.split("/"), query=query,
                        what=f"get {oid}", kind="get")

    def t_write_one(self):
        r, st = self.rng, self.state
        entity = r.choice(["Task", "Task", "Project", "Tag"])
        oid = st.some_id(r, entity)
        method = r.choice(["PATCH", "PATCH", "PUT", "DELETE"])
        headers = []
        version = st.versions.get(oid)
        if version is not None and r.random() < 0.5:
            headers.append(("If-Match", f'"{version if r.random() < 0.8 else max(1, version - 1)}"'))
        if method == "DELETE":
            return Template("DELETE", ["v1", "objects"] + oid.split("/"), headers=headers, what=f"delete {oid}", kind="delete")
        body = self._some_update(entity) if method == "PATCH" else self.values(entity)
        if version is not None and r.random() < 0.2:
            body["_version"] = version
        if r.random() < 0.1:
            body["_id"] = oid
        return Template(method, ["v1", "objects"] + oid.split("/"), headers=JSON_HEADERS + headers, body=body,
                        what=f"{method.lower()} {oid}", kind="write")

    def t_batch(self):
        r = self.rng
        entity = r.choice(ENTITIES)
        method = r.choice(["PATCH", "DELETE", "POST", "POST"])
        query = [("where", self.predicate(entity, valid=True))] if r.random() < 0.7 else []
        if method == "POST":
            if r.random() < 0.5:
                body = [self.values(entity) for _ in range(r.randint(0, 3))]
                return Template("POST", ["v1", "objects", entity], headers=JSON_HEADERS, body=body, what="batch insert (array)", kind="batch")
            lines = b"\n".join(dump(self.values(entity)) for _ in range(r.randint(0, 3)))
            return Template("POST", ["v1", "objects", entity], headers=[("Content-Type", "application/x-ndjson")], body=lines,
                            what="batch insert (ndjson)", kind="batch")
        body = self._some_update(entity) if method == "PATCH" else None
        return Template(method, ["v1", "objects", entity], query=query, headers=JSON_HEADERS if body else [], body=body,
                        what=f"batch {method}", kind="batch")

    def t_misc(self):
        r = self.rng
        choice = r.choice(["model", "healthz", "readyz", "openapi.json", "openapi.yaml", "changes", "changes", "unknown",
                           "aggregate", "metrics"])
        if choice == "changes":
            query = r.choice([[("since", "0")], [("since", r.choice(["1", "-1", "abc", "99999999999999999999", ""]))], [],
                              [("since", "0"), ("limit", "10")], [("since", "0"), ("wait", "1")], [("objects", "true")]])
            headers = [("Accept", "text/event-stream")] if r.random() < 0.2 else []
            return Template("GET", ["v1", "changes"], query=query, headers=headers, what="changes", kind="misc")
        if choice == "unknown":
            segments = r.choice([["v2", "objects", "Task"], ["v1"], [""], ["v1", "nope"], ["favicon.ico"], ["v1", "objects"],
                                 ["v1", "objects", "Task", "1", "extra"], ["v1", "objects", "Task", "aggregate"], ["v1", "transactions", "1"],
                                 ["V1", "model"], ["v1", "model", ""], ["v1", "MODEL"]])
            return Template(r.choice(["GET", "POST", "DELETE"]), segments, what="unknown path", kind="misc")
        if choice == "aggregate":
            return self.t_aggregate()
        method = "GET" if r.random() < 0.85 else r.choice(METHODS_ODD)
        return Template(method, ["v1", choice], what=choice, kind="misc")

    def t_aggregate(self):
        """GET /v1/objects/Task/aggregate: half the time a valid query (group keys, aggregates of
        the right types, having and sort over its names), else select items that are not
        (odd aliases, unknown or to-many key paths, unknown functions, broken calls)."""
        r = self.rng
        keys = ["project", "project.name", "done", "priority", "title", "due", "estimate", "project.archived"]
        if r.random() < 0.5:
            items = [f"k{i}:{key}" for i, key in enumerate(r.sample(keys, r.randint(0, 2)))]
            for i in range(r.randint(1, 4)):
                function = r.choice(["count", "sum", "avg", "min", "max"])
                key = r.choice(["priority", "estimate"] if function in ("sum", "avg") else keys + [""] if function == "count" else keys)
                items.append(f"a{i}:" + (key + "." if key else "") + function + "()")
            names = [item.split(":")[0] for item in items]
            query = [("select", ",".join(items))]
            if r.random() < 0.5:
                name = r.choice(names)
                query.append(("having", r.choice([f"{name} != nil", f"{name} > 1", f"NOT ({name} == nil) OR {name} < 3",
                                                  f"{name} IN {{1, 2}}", f"{name} == 9223372036854775807"])))
            if r.random() < 0.5:
                query.append(("sort", ",".join(("-" if r.random() < 0.5 else "") + n for n in r.sample(names, r.randint(1, len(names))))))
        else:
            odd = keys + ["tags", "project.tasks", "nope", "project..name", "", "$x", "title[c]"]
            items = []
            for _ in range(r.randint(1, 5)):
                alias = r.choice(["", "", "", "n:", "total:", "x y:", ":", "é:", "count:"])
                if r.random() < 0.4:
                    items.append(alias + r.choice(odd))
                else:
                    key = r.choice(odd + ["", "", ""])
                    call = r.choice(["count", "sum", "avg", "min", "max", "median", "COUNT", ""]) + r.choice(["()", "()", "(", "(x)", "()()", ")"])
                    items.append(alias + (key + "." if key else "") + call)
            query = [("select", ",".join(items))] if r.random() < 0.95 else []
            if r.random() < 0.5:
                query.append(("having", r.choice(["n > 1", "total >= 2.5", "count > 0 AND project != nil", "sum > 9223372036854775807",
                                                  "n ==", "n BETWEEN {1, 3}", 'project == "Project/1"', 'max BEGINSWITH "a"',
                                                  "sum > 1e400", "avg < -0.5", "count IN {1, 2}", "nope > 1", "tags.@count > 1",
                                                  "NOT (count > 1 OR count < 0)", "min == nil", 'total == "12.50"'])))
            if r.random() < 0.3:
                query.append(("sort", r.choice(["-n", "total,-project", "nope", "n[c]", "-count", "project.name", "-sum,max"])))
        if r.random() < 0.4:
            query.append(("where", self.predicate("Task", valid=r.random() < 0.8)))
        if r.random() < 0.3:
            query.append(("limit", r.choice(["1", "1000", "1001", "0", "-1", "x"])))
        if r.random() < 0.2:
            query.append(("offset", r.choice(["0", "5", "-1", "99999999999999999999", "9223372036854775807"])))
        return Template("GET", ["v1", "objects", "Task", "aggregate"], query=query, what="aggregate", kind="misc")

    # MARK: predicates

    def predicate(self, entity, valid=True, depth=0):
        r = self.rng
        if valid:
            choices = {
                "Task": ['priority >= 2', 'title BEGINSWITH[c] "la"', 'done == NO', 'estimate BETWEEN {1, 5}', 'due == nil',
                         'priority IN {1, 2}', 'project.name == "Apollo 1"', 'tags.label CONTAINS "u"', 'tags.@count > 0',
                         'title MATCHES "^[A-Z].*"', 'ANY tags.label == "urgent1"', 'NOT done', 'project == "Project/1"',
                         'SUBQUERY(tags, $t, $t.label BEGINSWITH "u").@count > 0', 'due > "2024-01-01T00:00:00Z"',
                         'due < CAST(800000000, "NSDate")', 'title LIKE "*a?"', 'TRUEPREDICATE', 'FALSEPREDICATE',
                         'priority > 1 AND (done == YES OR estimate < 3)', 'title ==[cd] "launch"', 'ALL tags.label != "x"',
                         'NONE tags.label == "x"', 'project.tasks.@count >= 1', 'tags.@max.label > "a"'],
                "Project": ['name BEGINSWITH "Ap"', 'archived == NO', 'tasks.@count > 1', 'ANY tasks.priority >= 4',
                            'SUBQUERY(tasks, $x, $x.done == YES).@count == 0', 'name MATCHES ".*1"', 'TRUEPREDICATE'],
                "Tag": ['label == "urgent1"', 'tasks.@count == 0', 'label IN {"a", "b"}', 'ANY tasks.title CONTAINS "a"', 'TRUEPREDICATE'],
            }[entity]
            text = r.choice(choices)
            if r.random() < 0.3:
                text = f"({text}) {r.choice(['AND', 'OR', '&&', '||'])} {r.choice(choices)}"
            return text
        choice = r.random()
        if choice < 0.45:
            lhs = r.choice(PREDICATE_KEYS)
            if r.random() < 0.2:
                lhs = r.choice(["ANY ", "ALL ", "NONE ", "SOME "]) + lhs
            return f"{lhs} {r.choice(OPERATORS)} {r.choice(PREDICATE_VALUES)}"
        if choice < 0.55:
            # Random tokens in random order.
            tokens = [r.choice(PREDICATE_KEYS), r.choice(OPERATORS), r.choice(PREDICATE_VALUES), "(", ")", "{", "}", ",", "NOT",
                      "AND", "OR", "SUBQUERY(", "$t", ".", "@count", "[c]", '"', "ANY", "BETWEEN", "CAST(", "%@"]
            return " ".join(r.choice(tokens) for _ in range(r.randint(1, 12)))
        if choice < 0.62:
            n = r.choice([50, 99, 100, 101, 1000, 5000])
            return r.choice(["(" * n + "done == YES" + ")" * n, "NOT " * n + "done", " AND ".join(["priority > 1"] * n),
                             " OR ".join(f"priority == {i}" for i in range(n)), "NOT (" * n + "done" + ")" * n,
                             "SUBQUERY(tags, $t, " * min(n, 60) + "$t.label == \"x\"" + ").@count > 0" * min(n, 60),
                             "{" * n + "1" + "}" * n])
        if choice < 0.68:
            n = r.choice([1000, 5000, 20000])
            item = r.choice(["{i}", '"x{i}"', "{i}.5", "nil", '"Project/{i}"'])
            return f"{r.choice(['priority', 'title', 'project', 'tags.label'])} IN {{" + ", ".join(item.format(i=i) for i in range(n)) + "}"
        if choice < 0.75:
            # Patterns that backtrack exponentially on the setup's 30-"a" title: rare, as each may
            # run until the server's query timeout (or, without one, until ours).
            catastrophic = ['"(a+)+b"', '"(a+)+"', '"(a|a)*b"', '"(.*a){20}"', '"((a*)*)*b"', '"(a|aa)+b"']
            benign = ['"^(\\\\w+\\\\s?)*$"', '"\\\\1"', '"("', '"[z-a]"', '"(?<=a+)b"', '"a{999999999}"', '".*"', '"[[:alpha:]]+"',
                      '"\\\\p{L}+"', '"(?i)LAUNCH.*"', '"\\\\Q"', '"(?x) # comment"', '"a**"', '"\\\\"', '""']
            pattern = r.choice(catastrophic) if r.random() < 0.1 else r.choice(benign)
            return f"{r.choice(['title', 'project.name', 'tags.label', 'name', 'label'])} MATCHES{r.choice(['', '[c]', '[cd]'])} {pattern}"
        if choice < 0.82:
            return r.choice([
                f'CAST({r.choice(HOSTILE_NUMBERS)}, "NSDate") {r.choice(["<", "==", ">"])} due',
                f'due {r.choice(["<", "==", ">", "BETWEEN"])} CAST({r.choice(HOSTILE_NUMBERS)}, "NSDate")',
                f'due BETWEEN {{CAST({r.choice(HOSTILE_NUMBERS)}, "NSDate"), CAST({r.choice(HOSTILE_NUMBERS)}, "NSDate")}}',
                f'SUBQUERY({r.choice(PREDICATE_KEYS)}, $t, $t.{r.choice(PREDICATE_KEYS)} == {r.choice(PREDICATE_VALUES)}).@count {r.choice(OPERATORS)} {r.choice(PREDICATE_VALUES)}',
                f'SUBQUERY(tags, $t, SUBQUERY($t.tasks, $u, $u.priority > 1).@count > 0).@count > 0',
                f'{r.choice(PREDICATE_KEYS)}.@{r.choice(["count", "sum", "avg", "min", "max", "distinctUnionOfObjects", "x"])} {r.choice(OPERATORS)} {r.choice(PREDICATE_VALUES)}',
                f'priority {r.choice(["==", "<", ">=", "IN", "BETWEEN"])} {r.choice(HOSTILE_NUMBERS)}',
                f'estimate {r.choice(["==", "<", ">="])} {r.choice(HOSTILE_NUMBERS)}',
                f'priority BETWEEN {{{r.choice(HOSTILE_NUMBERS)}, {r.choice(HOSTILE_NUMBERS)}}}',
            ])
        if choice < 0.9:
            text = r.choice(HOSTILE_STRINGS[:40])
            return f'{r.choice(["title", "name", "label", text])} {r.choice(OPERATORS)} "{text}"'
        return r.choice(["", " ", "(", ")", "\"", "'", "\\", "AND", "==", "$", "%", "@", "\u0000", "title ==", "== 1", "title == \"x",
                         "ANY", "SUBQUERY(", "CAST(", "{", "}", "[c]", "title ==[c", "1 == 1", "nil == nil", "\"a\" == \"a\"",
                         "title == title", "SELF == SELF", "priority + 1 == 2", "FUNCTION(title, 'x')", "title[0] == \"a\"",
                         "tags[FIRST].label == \"x\"", "tags[SIZE] == 1", "@count == 0", "$x == 1", "%K == %@"])

    # MARK: mutation

    def next(self, valid_share=0.25):
        r = self.rng
        maker = r.choices([self.t_insert, self.t_transaction, self.t_fetch, self.t_get, self.t_write_one, self.t_batch, self.t_misc],
                          weights=[14, 16, 22, 10, 14, 4, 6])[0]
        template = maker()
        if template.method in ("POST", "PATCH", "PUT", "DELETE") and r.random() < 0.2:
            # Idempotency keys from a small pool, so that replays and reuse under another request
            # happen as often as fresh keys; now and then a malformed one.
            key = r.choice([f"fuzz-key-{r.randint(0, 7)}", f"fuzz-key-{r.randint(0, 7)}", f"fresh-{r.random()}",
                            "", " ", "x" * 256, "x" * 255, "caf\u00e9", "a\tb", "\x00"])
            template.headers.append(("Idempotency-Key", key))
        if r.random() < valid_share:
            return template.render()
        if r.random() < 0.04:
            return self.raw_request()
        for _ in range(r.choice([1, 1, 1, 2, 3])):
            self.mutate(template)
        request = template.render()
        if r.random() < 0.12:
            self.mutate_bytes(request)
        if r.random() < 0.01:
            # The client goes away without reading the answer (a write may be queued meanwhile).
            request["abandon"] = True
            request["no_answer_ok"] = True
            request["what"] += " abandoned"
        return request

    def mutate(self, t):
        r = self.rng
        options = [self.m_path, self.m_method, self.m_headers, self.m_query]
        weights = [1, 0.5, 2, 2.5]
        if t.body is not None or t.kind in ("insert", "write", "transaction", "batch"):
            options += [self.m_body_value, self.m_body_structure]
            weights += [6, 2]
        if t.kind == "transaction":
            options.append(self.m_transaction)
            weights.append(5)
        if t.kind in ("fetch", "get"):
            options.append(self.m_fetch)
            weights.append(6)
        if t.kind in ("write", "delete"):
            options.append(self.m_version)
            weights.append(3)
        r.choices(options, weights=weights)[0](t)

    def m_path(self, t):
        r = self.rng
        choice = r.random()
        if len(t.segments) >= 4 and choice < 0.5:
            oid = r.choice(OBJECT_IDS + [self.state.some_id(r)])
            entity, _, pk = oid.partition("/")
            if r.random() < 0.5:
                t.segments[3] = _latin(pk) if "%" in pk else _enc(pk)
            else:
                t.segments[2:4] = [_enc(entity), _enc(pk)] if r.random() < 0.7 else [_enc(oid)]
            t.what += f" path->{oid!r}"
        elif choice < 0.7 and len(t.segments) >= 3:
            t.segments[2] = _enc(r.choice(["Nope", "task", "TASK", "", "Task ", "Tâsk", "_Task", "%", "Task%00", "..", ".", "x" * 5000,
                                           "Project", "Tag", "Task\u0301", "objects", "v1"]))
            t.what += f" entity->{t.segments[2][:40]!r}"
        else:
            mut = r.choice(["trailing-slash", "double-slash", "dot", "encoded", "long", "extra", "nul", "backslash", "fragment", "absolute"])
            if mut == "trailing-slash":
                t.segments.append("")
            elif mut == "double-slash":
                t.segments.insert(r.randint(0, len(t.segments)), "")
            elif mut == "dot":
                t.segments.insert(r.randint(0, len(t.segments)), r.choice([".", "..", "%2e%2e", "%2E"]))
            elif mut == "encoded":
                i = r.randrange(len(t.segments))
                t.segments[i] = "".join(f"%{ord(c):02X}" for c in t.segments[i])
            elif mut == "long":
                t.segments.append("a" * r.choice([1000, 8000, 40000]))
            elif mut == "extra":
                t.segments += r.choice([["x"], ["1", "2"], ["aggregate"], ["%00"], ["%ff"]])
            elif mut == "nul":
                t.segments[-1] += r.choice(["%00", "%ff%fe", "%c3%28", "%ed%a0%80", "%", "%z", "%2"])
            elif mut == "backslash":
                t.segments[-1] += "\\x"
            elif mut == "fragment":
                t.segments[-1] += "#frag"
            elif mut == "absolute":
                t.segments = ["http:", "", "127.0.0.1"] + t.segments
            t.what += f" path:{mut}"

    def m_method(self, t):
        t.method = self.rng.choice(METHODS_ODD)
        t.what += f" method->{t.method[:20]!r}"

    def m_headers(self, t):
        r = self.rng
        mut = r.choice(["if-match", "content-type", "huge", "many", "repeat", "merge", "length-lie", "length-omit", "chunked",
                        "no-body", "expect", "odd-names", "idempotency", "request-id", "accept", "author", "auth", "host"])
        if mut == "if-match":
            t.headers.append(("If-Match", r.choice(IF_MATCH)))
        elif mut == "content-type":
            t.headers = [h for h in t.headers if h[0].lower() != "content-type"]
            if r.random() < 0.9:
                t.headers.append(("Content-Type", _latin(r.choice(CONTENT_TYPES))))
        elif mut == "huge":
            t.headers.append((r.choice(["X-Big", "If-Match", "Content-Type", "Merge-Policy", "Cookie"]),
                              "x" * r.choice([4000, 16000, 31000, 40000, 100000])))
        elif mut == "many":
            t.headers += [(f"X-H{i}", "v") for i in range(r.choice([100, 500, 2000]))]
        elif mut == "repeat":
            name = r.choice(["Content-Type", "If-Match", "Merge-Policy", "Content-Length", "Host", "Transfer-Encoding"])
            value = {"Content-Type": "text/plain", "If-Match": '"1"', "Merge-Policy": "overwrite", "Content-Length": "0",
                     "Host": "evil", "Transfer-Encoding": "chunked"}[name]
            t.headers += [(name, value)] * r.randint(2, 4)
        elif mut == "merge":
            policy = r.choice(["error", "store-trump", "object-trump", "overwrite", "rollback", "", "ERROR", "nope", "error,error", "\u00e9"])
            if r.random() < 0.5:
                t.headers.append(("Merge-Policy", _latin(policy)))
            else:
                t.query.append(("merge", policy))
        elif mut == "length-lie":
            if t.body is None:
                t.body = b""
            size = len(dump(t.body)) if not isinstance(t.body, (bytes, bytearray)) else len(t.body)
            t.length = r.choice([0, 1, max(0, size - 1), size + 1, size + 1000, -1, "abc", "99999999999999999999", 8388609, "1, 2",
                                 " 5", "0x10"])
        elif mut == "length-omit":
            t.length = "omit"
        elif mut == "chunked":
            t.chunked = True
            if t.body is None:
                t.body = b""
        elif mut == "no-body":
            t.body = None
        elif mut == "expect":
            t.headers.append(("Expect", r.choice(["100-continue", "nope"])))
        elif mut == "odd-names":
            t.headers.append((r.choice(["X Space", "X:Colon", "", "\u00e9", "X\x7f", "X-Ctl\x01"]).encode("utf-8").decode("latin-1"), "v"))
        elif mut == "idempotency":
            t.headers.append(("Idempotency-Key", r.choice(["k1", "", "x" * 300, "\u00e9", "a b", "k1"])))
        elif mut == "request-id":
            t.headers.append((r.choice(["Request-Id", "X-Request-Id"]), r.choice(["abc", "", "x" * 65, "a b", "\u00e9", "../../etc"])))
        elif mut == "accept":
            t.headers.append(("Accept", r.choice(["text/event-stream", "application/xml", "*/*", "", "application/json;q=0"])))
        elif mut == "author":
            t.headers.append(("Author", _latin(r.choice(HOSTILE_STRINGS[:30]))[:1000]))
        elif mut == "auth":
            t.headers.append(("Authorization", r.choice(["Bearer x", "Bearer ", "Basic Zm9vOmJhcg==", "x" * 2000])))
        elif mut == "host":
            t.headers.append(("Host", r.choice(["", "a" * 3000, "[::1]:99999", "evil.example"])))
        t.what += f" header:{mut}"

    def m_query(self, t):
        r = self.rng
        mut = r.choice(["unknown", "repeat", "empty-name", "raw", "limit", "offset", "count", "where", "merge"])
        if mut == "unknown":
            t.query.append((r.choice(["nope", "WHERE", "Limit", "where ", "", "_", "x" * 1000, "\u00e9"]), r.choice(["1", "", None])))
        elif mut == "repeat" and t.query:
            t.query.append(r.choice(t.query))
        elif mut == "empty-name":
            t.raw_query = r.choice(["=x", "&", "&&&", "=", "where", "where=", "a=b=c", "%", "%zz=1", "%00=1", "where=%ff%fe",
                                    "where=%ed%a0%80", "limit=%00", "where=title%20%3D%3D%20%22%c3%28%22", "where=" + "%" * 100,
                                    "?", "??where=x", "where=a+b", "where=%2B", "sort=%c0%af"])
        elif mut == "raw" and t.query:
            rendered = "&".join(_enc(k) + "=" + _enc(v or "") for k, v in t.query)
            i = r.randrange(len(rendered) + 1)
            t.raw_query = rendered[:i] + r.choice(["%", "%z", "%00", "%ff", "&", "=", "#", " ", "%25", "\x7f"]) + rendered[i:]
        elif mut in ("limit", "offset"):
            t.query.append((mut, r.choice(["-1", "0", "1", "1000", "1001", "99999999999999999999", "9223372036854775807",
                                           "-9223372036854775808", "abc", "", "1.5", "1e3", " 1", "+1", "0x10", "\u0661", "NaN"])))
        elif mut == "count":
            t.query.append(("count", r.choice(["true", "yes", "TRUE", "2", "", "null"])))
        elif mut == "where":
            t.query.append(("where", self.predicate(r.choice(ENTITIES), valid=False)))
        elif mut == "merge":
            t.query.append(("merge", r.choice(["error", "nope", "", "overwrite", "rollback"])))
        t.what += f" query:{mut}"

    def m_fetch(self, t):
        r = self.rng
        entity = t.segments[2] if len(t.segments) > 2 and t.segments[2] in ENTITIES else "Task"
        mut = r.choice(["where", "where", "where", "sort", "fields", "include", "after", "after", "limit"])
        t.query = [q for q in t.query if q[0] != mut] if r.random() < 0.7 else t.query
        if mut == "where":
            t.query.append(("where", self.predicate(entity, valid=False)))
        elif mut == "sort":
            keys = PREDICATE_KEYS + SORT_KEYS[entity] + ["", "-", "+", "--title", "title[x]", "title[", "title[]", "title[cdcd]",
                                                          "-title[c]", "priority,", ",,,", "tags", "project", "tags.label", "_id"]
            t.query.append(("sort", ",".join(r.choice(keys) for _ in range(r.randint(1, 4))) if r.random() < 0.95
                            else ",".join(["title"] * 2000)))
        elif mut == "fields":
            t.query.append(("fields", r.choice([",".join(r.choice(PREDICATE_KEYS) for _ in range(3)), "", ",", "_id", "_version", "x" * 3000,
                                                ",".join(ATTRIBUTES[entity] * 100), "title,title", "tags.label"])))
        elif mut == "include":
            rels = ["tasks", "project", "tags"]
            n = r.choice([2, 3, 4, 5, 8, 20, 100])
            path = ".".join(r.choice(rels) for _ in range(n))
            cyc = {"Project": "tasks.project", "Task": "project.tasks", "Tag": "tasks.tags"}[entity]
            t.query.append(("include", r.choice([path, ".".join([cyc] * (n // 2 or 1)), "", ".", "..", "nope", "title", "tasks.",
                                                 ".tasks", ",".join(INCLUDES[entity]), "tasks,tasks", "project.project", "SELF",
                                                 ",".join(rels * 50)])))
        elif mut == "after":
            t.query.append(("after", self.cursor(entity, t)))
        elif mut == "limit":
            t.query.append(("limit", r.choice(["-1", "0", "1001", "99999999999999999999", "abc", "1e3", "1000"])))
            t.query.append(("offset", r.choice(["-1", "99999999999999999999", "9223372036854775807", "abc", "0", "4611686018427387904"])))
        t.what += f" fetch:{mut}"

    def cursor(self, entity, t):
        r = self.rng
        real = [c for c in self.state.cursors]
        choice = r.random()
        if real and choice < 0.35:
            e, sort, token = r.choice(real)
            mut = r.choice(["as-is", "truncate", "flip", "append", "other-sort"])
            if mut == "truncate":
                return token[:r.randrange(len(token) + 1)]
            if mut == "flip":
                i = r.randrange(len(token))
                return token[:i] + r.choice("ABCxyz019-_+/=") + token[i + 1:]
            if mut == "append":
                return token + r.choice(["=", "==", "A", "!", "%"])
            if mut == "other-sort":
                t.query = [q for q in t.query if q[0] != "sort"]
                t.query.append(("sort", r.choice(SORT_KEYS[entity])))
            return token
        if choice < 0.55:
            return r.choice(["", "x", "=", "!!!!", "AAAA", "e30", "W10", "bnVsbA", base64.b64encode(b"\xff\xfe").decode(), "a" * 20000,
                             base64.urlsafe_b64encode(b"{" * 10 + b"}" * 10).decode(), "eyJvIjoi", "%", "\u00e9"])
        # A cursor made here: the right fingerprint for a sort, hostile values and key.
        sort_keys = r.sample(SORT_KEYS.get(entity, ["title"]), k=r.randint(0, 2))
        descs = [("-" if r.random() < 0.3 else "") + k for k in sort_keys]
        t.query = [q for q in t.query if q[0] != "sort"]
        if descs:
            t.query.append(("sort", ",".join(descs)))
        values = [self.cursor_value() for _ in range(len(descs) + (1 if r.random() < 0.1 else 0) - (1 if descs and r.random() < 0.1 else 0))]
        pk = r.choice([Raw("1"), Raw("0"), Raw("-1"), Raw("9223372036854775807"), Raw("9223372036854775808"), Raw("1e-9223372036854775808"),
                       Raw("1E400"), Raw("1.5"), "1", None, Raw("-9223372036854775808")])
        doc = {"o": fingerprint(entity, descs) if r.random() < 0.9 else r.choice(["", "x"]), "p": pk, "k": values}
        raw = dump(doc)
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def cursor_value(self):
        r = self.rng
        tag = r.choice(["i", "r", "f", "t", "b", "string", "decimal", "date", "binary", "uuid", "uri", "boolean", "integer64", "x", None])
        if tag is None:
            return r.choice([None, 1, "s", [], [1, 2, 3], {"a": 1}])
        value = r.choice([str(r.choice(HOSTILE_NUMBERS)), "nan", "inf", "-inf", "-nan", "1e308", "", "x", r.choice(HOSTILE_STRINGS[:30]),
                          True, Raw(r.choice(HOSTILE_NUMBERS)), None, "2024-01-01T00:00:00Z", "AAAA", "00000000-0000-0000-0000-000000000000"])
        return [tag, value]

    def m_version(self, t):
        r = self.rng
        if r.random() < 0.5 or t.method == "DELETE":
            t.headers = [h for h in t.headers if h[0] != "If-Match"]
            t.headers.append(("If-Match", r.choice(IF_MATCH)))
        elif isinstance(t.body, dict):
            t.body["_version"] = r.choice(VERSIONS)
        t.what += " version"

    def m_body_value(self, t):
        """Replaces one value somewhere in the JSON body with a hostile one."""
        r = self.rng
        if isinstance(t.body, (bytes, bytearray)) or t.body is None:
            t.body = {r.choice(["title", "name", "label", "_version"]): hostile_scalar(r)}
            t.what += " body:new"
            return
        slots = []
        _slots(t.body, slots)
        if not slots:
            t.body = hostile_scalar(r)
            return
        container, key = r.choice(slots)
        choice = r.random()
        if choice < 0.45:
            value = Raw(r.choice(HOSTILE_NUMBERS))
        elif choice < 0.6:
            value = r.choice(HOSTILE_STRINGS)
        elif choice < 0.7:
            value = r.choice(OBJECT_IDS + [self.state.some_id(r)] + [[self.state.some_id(r)], [r.choice(OBJECT_IDS)] * 2])
        elif choice < 0.75:
            value = Raw(b'"' + r.choice(INVALID_UTF8) + b'"')
        elif choice < 0.8:
            value = deep(r)
        else:
            value = hostile_scalar(r)
        if isinstance(container, dict) and r.random() < 0.25:
            # A new key instead: unknown, reserved, or another property of the entity.
            key = r.choice(["nope", "_id", "_version", "_deleted", "", "title", "priority", "estimate", "due", "project", "tags",
                            "tasks", "name", "label", "archived", "done", "\u00e9", "x" * 1000, "Title", "_pk"])
        container[key] = value
        t.what += f" body[{str(key)[:20]}]={_short(value)}"

    def m_body_structure(self, t):
        r = self.rng
        mut = r.choice(["wrap-array", "scalar", "deep", "dup-keys", "empty-object", "many-keys", "huge-array", "ndjson-garbage", "bytes"])
        body = t.body if not isinstance(t.body, (bytes, bytearray)) else {"title": "x"}
        if mut == "wrap-array":
            t.body = [body] * r.choice([1, 2, 100])
        elif mut == "scalar":
            t.body = r.choice([None, True, 1, "x", Raw("1e-9223372036854775808"), [], Raw(b"")])
        elif mut == "deep":
            t.body = deep(r)
        elif mut == "dup-keys" and isinstance(body, dict) and body:
            pairs = list(body.items())
            k, _ = r.choice(pairs)
            pairs.insert(r.randrange(len(pairs) + 1), (k, hostile_scalar(r)))
            t.body = Dup(pairs)
        elif mut == "empty-object":
            t.body = {}
        elif mut == "many-keys":
            t.body = {f"k{i}": i for i in range(r.choice([1000, 20000]))}
        elif mut == "huge-array":
            t.body = {"operations": [{"op": "insert", "entity": "Tag", "values": {"label": f"bulk{self.state.unique('')}-{i}"}}
                                     for i in range(r.choice([500, 3000]))]} if t.kind == "transaction" else [1] * 100_000
        elif mut == "ndjson-garbage":
            t.headers = [h for h in t.headers if h[0].lower() != "content-type"] + [("Content-Type", "application/x-ndjson")]
            t.body = r.choice([b"{}\n{", b"\n\n", b"[1]\n", b'{"title":"x"}\n\xff\n', b"", b"null\nnull"])
        elif mut == "bytes":
            t.body = r.choice([b"", b" ", b"\x00", b"\xef\xbb\xbf{}", b"{\"title\":\"x\"}\x00", b"\xff\xfe{\x00}\x00", b"{" * 10, b"}",
                               b'{"title":"x"} {"title":"y"}', b"[", b'{"a":1,}', b"{'a':1}", b'{"title":"\\ud800"}',
                               b'{"title":"\\uD800\\uDC00"}', b'{"title":"\\u00"}', b'{"title":"\\x41"}', b'{"title":"a\nb"}',
                               b'{"title":"a\tb"}', b"\x1f\x8b\x08\x00"])
        t.what += f" body:{mut}"

    def m_transaction(self, t):
        r = self.rng
        body = t.body if isinstance(t.body, dict) else {"operations": []}
        ops = body.get("operations") if isinstance(body.get("operations"), list) else []
        st = self.state
        mut = r.choice(["ref-unknown", "ref-wrong-entity", "ref-deleted", "ref-before", "ref-dup", "ref-shadow", "ref-types",
                        "update-deleted-ref", "delete-twice", "op-odd", "entity-odd", "version-odd", "operations-odd", "object-odd",
                        "ref-in-tomany", "self-ref", "wrong-entity-id", "delete-then-link"])
        if mut == "ref-unknown":
            ops.append({"op": "insert", "entity": "Task", "values": {"title": "x", "project": r.choice(["t99", "", "ref", "t1 "])}})
        elif mut == "ref-wrong-entity":
            ops[:0] = [{"op": "insert", "entity": "Tag", "ref": "w1", "values": {"label": st.unique("w")}}]
            ops.append({"op": "insert", "entity": "Task", "ref": "w2", "values": {"title": "x", r.choice(["project", "tags"]):
                        r.choice(["w1", ["w1"]])}})
            if r.random() < 0.5:
                ops.append({"op": "update", "object": "w1", "values": {"tasks": ["w2"]}})
        elif mut == "ref-deleted":
            ops += [{"op": "insert", "entity": "Project", "ref": "d1", "values": {"name": st.unique("d")}},
                    {"op": "delete", "object": "d1"},
                    {"op": "insert", "entity": "Task", "ref": "d2", "values": {"title": "x", "project": "d1"}}]
            if r.random() < 0.5:
                ops.append({"op": "update", "object": "d1", "values": {"name": "again"}})
        elif mut == "ref-before":
            ops[:0] = [{"op": "insert", "entity": "Task", "ref": "b1", "values": {"title": "x", "project": "b2"}},
                       {"op": "update", "object": "b2", "values": {"name": "y"}}]
            ops.append({"op": "insert", "entity": "Project", "ref": "b2", "values": {"name": st.unique("b")}})
        elif mut == "ref-dup":
            ops += [{"op": "insert", "entity": "Tag", "ref": "dup", "values": {"label": st.unique("u")}},
                    {"op": "insert", "entity": r.choice(["Tag", "Project"]), "ref": "dup", "values": {"label": st.unique("u"), "name": "n"}}]
        elif mut == "ref-shadow":
            oid = st.some_id(r, "Project")
            ops += [{"op": "insert", "entity": r.choice(["Tag", "Project"]), "ref": oid, "values": {"name": st.unique("s"), "label": st.unique("s")}},
                    {"op": "insert", "entity": "Task", "values": {"title": "x", "project": oid}},
                    {"op": r.choice(["update", "delete"]), "object": oid, "values": {"name": "z"}}]
        elif mut == "ref-types":
            ops.append({"op": "insert", "entity": "Task", "ref": hostile_scalar(r), "values": {"title": "x"}})
        elif mut == "update-deleted-ref":
            ops += [{"op": "insert", "entity": "Task", "ref": "u1", "values": {"title": "x"}}, {"op": "delete", "object": "u1"},
                    {"op": r.choice(["update", "delete"]), "object": "u1", "values": {"title": "y"}}]
        elif mut == "delete-twice":
            oid = st.some_id(r)
            ops += [{"op": "delete", "object": oid},
                    {"op": r.choice(["delete", "update"]), "object": oid, "values": self._some_update(oid.split("/")[0])}]
        elif mut == "op-odd":
            ops.append({"op": r.choice(["upsert", "", "INSERT", None, 1, ["insert"]]), "entity": "Task", "object": "Task/1"})
        elif mut == "entity-odd":
            ops.append({"op": "insert", "entity": r.choice(["Nope", "", None, 1, "task", "_Task", ["Task"]]), "values": {"title": "x"}})
        elif mut == "version-odd":
            ops.append({"op": r.choice(["update", "delete"]), "object": st.some_id(r), "version": r.choice(VERSIONS), "values": {}})
        elif mut == "operations-odd":
            t.body = r.choice([{"operations": {}}, {"operations": None}, {"operations": [None, 1, "x", []]}, {"ops": []}, [],
                               {"operations": []}, Dup([("operations", []), ("operations", ops)]), {"operations": ops, "extra": 1}])
            t.what += f" tx:{mut}"
            return
        elif mut == "object-odd":
            ops.append({"op": r.choice(["update", "delete"]), "object": r.choice(OBJECT_IDS + [None, 1, [], {}]), "values": {"title": "y"}})
        elif mut == "ref-in-tomany":
            ops += [{"op": "insert", "entity": "Tag", "ref": "m1", "values": {"label": st.unique("m")}},
                    {"op": "insert", "entity": "Task", "ref": "m2", "values": {"title": "x", "tags": ["m1", "m1", st.some_id(r, "Tag"), "m2"]}}]
        elif mut == "self-ref":
            ops.append({"op": "insert", "entity": "Task", "ref": "me", "values": {"title": "x", "project": "me", "tags": ["me"]}})
        elif mut == "wrong-entity-id":
            ops.append({"op": "insert", "entity": "Task", "values": {"title": "x", "project": st.some_id(r, r.choice(["Task", "Tag"])),
                                                                     "tags": [st.some_id(r, r.choice(["Task", "Project"]))]}})
        elif mut == "delete-then-link":
            oid = st.some_id(r, "Project")
            ops += [{"op": "delete", "object": oid}, {"op": "insert", "entity": "Task", "values": {"title": "x", "project": oid}}]
        r.shuffle(ops) if r.random() < 0.1 else None
        body["operations"] = ops
        t.body = body
        t.what += f" tx:{mut}"

    def mutate_bytes(self, request):
        r = self.rng
        body = request.get("body")
        if body is None or r.random() < 0.2:
            target = request["target"]
            i = r.randrange(len(target) + 1)
            request["target"] = target[:i] + r.choice(["\x00", "\xff", " ", "\t", "%", "\r\n", "\x7f", "#", "?", "\xc3\x28"]) + target[i:]
            request["what"] += " bytes:target"
            return
        mut = r.choice(["truncate", "garbage", "insert", "invalid-utf8", "bom", "whitespace", "nul"])
        if mut == "truncate":
            request["body"] = body[:r.randrange(len(body) + 1)]
        elif mut == "garbage":
            request["body"] = body + r.choice(["x", "}", "]", ",", "\x00", " {}", "\n{}", "\xff", "/*", "//"])
        elif mut == "insert":
            i = r.randrange(len(body) + 1)
            request["body"] = body[:i] + r.choice(["\"", "{", "[", ",", ":", "\\", "\x00", "\x01", "e", "-", "."]) + body[i:]
        elif mut == "invalid-utf8":
            i = r.randrange(len(body) + 1)
            request["body"] = body[:i] + s(r.choice(INVALID_UTF8)) + body[i:]
        elif mut == "bom":
            request["body"] = "\xef\xbb\xbf" + body
        elif mut == "whitespace":
            request["body"] = r.choice([" ", "\n", "\r\n", "\t", "\x0b", "\x0c", "\xa0"]) + body + r.choice([" ", "\n", "\x0c"])
        elif mut == "nul":
            request["body"] = body.replace(":", ":\x00", 1)
        request["what"] += f" bytes:{mut}"
        if request.get("length") is None and not request.get("chunked"):
            pass  # the true length of the new body is sent

    # MARK: malformed HTTP

    def raw_request(self):
        r = self.rng
        body = '{"title":"x"}'
        choices = [
            "GET\r\n\r\n", "GET /v1/healthz\r\n\r\n", "GET /v1/healthz HTTP/1.1\r\n\r\n", "GET /v1/healthz HTTP/9.9\r\nHost: x\r\n\r\n",
            "GET /v1/healthz HTTP/1.0\r\n\r\n", "GET  /v1/healthz  HTTP/1.1\r\nHost: x\r\n\r\n", " GET / HTTP/1.1\r\n\r\n",
            "\r\n\r\n", "\r\n", "x", "GET /v1/model HTTP/1.1\r\nHost: x\r\n", "GET /v1/model HTTP/1.1\nHost: x\n\n",
            "GET /v1/model HTTP/1.1\r\nHost: x\r\nBad header line\r\n\r\n", "GET /v1/model HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n",
            "GET /v1/model HTTP/1.1\r\nHost: x\r\n folded: y\r\n\r\n", "GET /v1/model HTTP/1.1\r\nHost: x\r\nX: a\r\n  continued\r\n\r\n",
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n" + body,
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 13\r\n\r\n" + body,
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n",
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nd\r\n" + body + "\r\n",
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n" + body,
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\nd\r\n" + body + "\r\n0\r\n\r\n",
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -13\r\n\r\n" + body,
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 18446744073709551629\r\n\r\n" + body,
            "POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n" + body
            + "GET /v1/objects/Task/1 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/model HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n",
            "GET /v1/objects/Task?where=" + "a" * 40000 + " HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /" + "a" * 70000 + " HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /v1/model HTTP/1.1\r\nHost: x\r\nX: " + "y" * 70000 + "\r\n\r\n",
            "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + "\x00" * 40,  # a TLS ClientHello's start
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET /v1/healthz HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
            "\x00" * 100, "\xff" * 100, "GET /\x00 HTTP/1.1\r\n\r\n", "GET http://x/v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET * HTTP/1.1\r\nHost: x\r\n\r\n", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n",
            "GET /v1/healthz?" + "&" * 5000 + " HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /v1/objects/Task?" + "&".join(f"where={i}" for i in range(2000)) + " HTTP/1.1\r\nHost: x\r\n\r\n",
        ]
        raw = r.choice(choices)
        request = {"raw": raw, "what": "raw HTTP", "no_answer_ok": True}
        if r.random() < 0.15:
            # Slowloris, bounded: the request in a few pieces with short pauses.
            cuts = sorted(r.sample(range(1, max(2, len(raw))), k=min(3, max(1, len(raw) - 1))))
            request["cuts"] = cuts
            request["pause"] = r.choice([0.05, 0.2, 0.5])
            request["what"] += " (slow)"
        if "pause" in request and r.random() < 0.5:
            request["half_close"] = False  # slow and left open: the server must time it out, not us
        return request


def _slots(value, out, depth=0):
    if depth > 6:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k))
            _slots(v, out, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((value, i))
            _slots(v, out, depth + 1)


def _short(value):
    text = repr(value)
    return text[:60] + ("..." if len(text) > 60 else "")


def fingerprint(entity, sorts):
    """FetchCursor.fingerprint: FNV-1a 64 of "Entity|key:a|d:options" in base 36."""
    parts = [entity]
    for raw in sorts:
        key = raw
        ascending = not key.startswith("-")
        if key[:1] in "-+":
            key = key[1:]
        options = 0
        if key.endswith("]") and "[" in key:
            open_at = key.rindex("[")
            for letter in key[open_at + 1:-1]:
                options |= {"c": 1, "d": 2}.get(letter, 0)
            key = key[:open_at]
        parts.append(f"{key}:{'a' if ascending else 'd'}:{options}")
    h = 0xcbf29ce484222325
    for byte in "|".join(parts).encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, rem = divmod(h, 36)
        out = digits[rem] + out
        if h == 0:
            return out


def setup_requests(state):
    """The corpus every run starts from (also replayed before a reproduction file's batch)."""
    out = []
    for i in range(1, 4):
        out.append({"method": "POST", "target": "/v1/objects/Project", "headers": [["Content-Type", "application/json"]],
                    "body": s(dump({"name": f"Apollo {i}"})), "what": "setup"})
    for label in ["urgent1", "bug1", "later1"]:
        out.append({"method": "POST", "target": "/v1/objects/Tag", "headers": [["Content-Type", "application/json"]],
                    "body": s(dump({"label": label})), "what": "setup"})
    titles = ["Launch", "Design", "a" * 30 + "c", "Ünïcode", "re-entry", "x" * 2000]
    for i, title in enumerate(titles):
        values = {"title": title, "priority": i % 6, "done": i % 2 == 0, "project": f"Project/{1 + i % 3}", "tags": [f"Tag/{1 + i % 3}"]}
        if i % 3 == 0:
            values["due"] = "2024-05-01T12:00:00.000Z"
            values["estimate"] = 2.5
        out.append({"method": "POST", "target": "/v1/objects/Task", "headers": [["Content-Type", "application/json"]],
                    "body": s(dump(values)), "what": "setup"})
    out.append({"method": "GET", "target": "/v1/objects/Task?limit=2&sort=title", "headers": [], "body": None, "what": "setup"})
    out.append({"method": "GET", "target": "/v1/objects/Task?limit=1", "headers": [], "body": None, "what": "setup"})
    return out

