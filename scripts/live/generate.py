"""What the walk asks and writes, on the demo model (models/tracker.json): live queries on Task
(mostly) and Project, and writes of every kind the contract lists.

Values come from small pools on purpose: equal titles, priorities, estimates and dates make
ties (broken by the primary key), project names and tag labels collide (409s), and a few
values sit exactly on the predicates' edges, so objects move in and out of windows a lot.
"""
import json
from urllib.parse import quote

# Live queries -------------------------------------------------------------------------------

TASK_WHERE = [
    None, "TRUEPREDICATE", "priority >= 3", "priority == 2", "priority IN {1, 4}", "done == YES", "NOT done",
    'title BEGINSWITH "a"', 'title CONTAINS[c] "ta"', 'title BEGINSWITH[c] "e"',
    "estimate == nil", "estimate > 1.5", "estimate != nil AND estimate < 4", "estimate BETWEEN {1, 5}",
    "due == nil", 'due > "2025-03-03T00:00:00Z"', 'due <= "2025-03-04T12:00:00Z" AND priority < 4',
    'project.name BEGINSWITH "p1"', "project.archived == NO", "project == nil", 'project.name == "p2"',
    'ANY tags.label == "t2"', "tags.@count > 1", "tags.@count == 0",
    'SUBQUERY(tags, $t, $t.label BEGINSWITH "t").@count > 0',
    "done OR priority == 5", 'NOT (title BEGINSWITH "z") AND project != nil',
]
TASK_SORT = [
    None, "priority", "-priority", "-estimate", "estimate", "due", "-due", "title[c]", "-title[c]", "title",
    "project.name", "-project.name", "priority,-estimate", "-done,due,title[c]", "project.name,-priority",
    "done,estimate",
]
TASK_FIELDS = ["title", "priority", "done", "estimate", "due", "project", "tags"]

PROJECT_WHERE = [None, "TRUEPREDICATE", "archived == NO", 'name BEGINSWITH "p1"', "tasks.@count > 2",
                 "ANY tasks.done == YES", 'name CONTAINS[c] "P"', "tasks.@count == 0"]
PROJECT_SORT = [None, "name", "-name", "archived,name", "name[c]", "-archived"]
PROJECT_FIELDS = ["name", "archived", "tasks"]

# Small limits weigh most: with them the window's edges move at nearly every write.
LIMITS = [1, 2, 3, 5, 10, 50, 1000, None]  # None: the default, 100
LIMIT_WEIGHTS = [4, 3, 3, 3, 2, 2, 1, 1]


class Query:
    """A fetch's parameters, asked both as a fetch and as a live query."""

    def __init__(self, entity, where=None, sort=None, limit=None, fields=None):
        self.entity, self.where, self.sort, self.limit, self.fields = entity, where, sort, limit, fields

    @property
    def effective_limit(self):
        return self.limit if self.limit is not None else 100

    def params(self):
        pairs = [("where", self.where), ("sort", self.sort),
                 ("limit", None if self.limit is None else str(self.limit)), ("fields", self.fields)]
        return [(name, value) for name, value in pairs if value is not None]

    def query_string(self, extra=()):
        pairs = self.params() + list(extra)
        return "&".join(f"{name}={quote(value, safe='')}" for name, value in pairs)

    def fetch_path(self):
        text = self.query_string()
        return f"/v1/objects/{self.entity}" + (f"?{text}" if text else "")

    def live_path(self, extra=()):
        text = self.query_string(extra)
        return f"/v1/objects/{self.entity}/live" + (f"?{text}" if text else "")

    def key(self):
        return (self.entity, self.where, self.sort, self.limit, self.fields)

    def __str__(self):
        return self.live_path()


def random_query(rng, task_where, task_sort, project_where, project_sort):
    """A random query; the pools are the ones the server accepted as fetches."""
    if rng.random() < 0.8:
        entity, where, sort, fields = "Task", rng.choice(task_where), rng.choice(task_sort), TASK_FIELDS
    else:
        entity, where, sort, fields = "Project", rng.choice(project_where), rng.choice(project_sort), PROJECT_FIELDS
    limit = rng.choices(LIMITS, LIMIT_WEIGHTS)[0]
    chosen = None
    if rng.random() < 0.3:
        chosen = ",".join(rng.sample(fields, rng.randint(1, len(fields))))
    return Query(entity, where, sort, limit, chosen)


def subscription_queries(rng, count, pools):
    """count queries, a quarter of them repeating an earlier one exactly (the server shares a
    window between identical live queries: those must still each be right)."""
    queries = []
    for _ in range(count):
        if queries and rng.random() < 0.25:
            queries.append(rng.choice(queries))
        else:
            queries.append(random_query(rng, *pools))
    return queries


# Writes -------------------------------------------------------------------------------------

TITLES = ["alpha", "Alpha", "a", "A", "beta", "Beta", "b", "gamma", "delta", "epsilon", "eta", "theta",
          "zeta", "Zeta", "task 1", "task 10", "task 2", "écrire", "Écrire", "ta"]
PROJECT_NAMES = ["p1", "p2", "p3", "p10", "p11", "p12", "p1x", "P1", "q1", "alpha", "Beta", "pz"]
TAG_LABELS = ["t1", "t2", "t3", "t4", "T2", "tx", "u1", "urgent", "x"]
ESTIMATES = [None, None, 0.5, 1, 1.5, 2, 3.5, 4, 5, 8, -1.25]
DUES = [None, None, "2025-03-01T00:00:00Z", "2025-03-03T00:00:00Z", "2025-03-03T00:00:00.5Z",
        "2025-03-04T12:00:00Z", "2025-03-05T08:30:00Z", "2025-03-09T23:59:59.999Z"]

BATCH_PATCH_WHERE = ['priority == 1', 'done == YES AND priority >= 4', 'title BEGINSWITH "b"',
                     'estimate == nil AND priority == 2', 'ANY tags.label == "t3"', 'project.name == "p2"',
                     'due == nil AND done == NO', 'title ==[c] "alpha"']
BATCH_DELETE_WHERE = ['priority == 5 AND done == YES', 'title == "zeta"', 'estimate > 7',
                      'project == nil AND priority == 0 AND done == YES', 'title BEGINSWITH "task 1"',
                      'due == "2025-03-09T23:59:59.999Z"']

# Population bounds: enough tasks that windows of 50 and 1000 differ, few enough that a
# 1000-limit snapshot stays small and every project and tag is shared by several tasks.
TASKS_LOW, TASKS_HIGH = 60, 350


class Write:
    def __init__(self, kind, method, path, body=None, headers=None):
        self.kind, self.method, self.path, self.body, self.headers = kind, method, path, body, headers or {}

    def __str__(self):
        body = "" if self.body is None else " " + json.dumps(self.body)[:160]
        extra = "".join(f" {k}: {v}" for k, v in self.headers.items())
        return f"{self.method} {self.path}{extra}{body}"


class Registry:
    """The objects the writers pick from: re-read from the server before each round (the
    writes of a round run concurrently, so a pick may be gone by then: a 404, counted)."""

    def __init__(self, tasks, projects, tags):
        self.tasks, self.projects, self.tags = tasks, projects, tags


def pk(object_id):
    return object_id.split("/", 1)[1]


def task_values(rng, reg, every=False):
    """Values of a Task: all of them (insert, PUT) or a random few (PATCH)."""
    makers = {
        "title": lambda: rng.choice(TITLES) if rng.random() < 0.8 else f"{rng.choice(TITLES)} {rng.randint(0, 9)}",
        "priority": lambda: rng.randint(0, 5) if rng.random() < 0.97 else rng.choice([-1, 6]),  # 422 sometimes
        "done": lambda: rng.random() < 0.4,
        "estimate": lambda: rng.choice(ESTIMATES),
        "due": lambda: rng.choice(DUES),
        "project": lambda: rng.choice(reg.projects)["_id"] if reg.projects and rng.random() < 0.75 else None,
        "tags": lambda: sorted({t["_id"] for t in rng.sample(reg.tags, min(len(reg.tags), rng.randint(0, 3)))}),
    }
    names = list(makers) if every else rng.sample(list(makers), rng.randint(1, 3))
    return {name: makers[name]() for name in names}


def maybe_if_match(rng, obj):
    """Sometimes a base version; a stale one (another writer got there first) is a 409."""
    return {"If-Match": f'"{obj["_version"]}"'} if rng.random() < 0.15 else {}


def insert_task(rng, reg):
    values = task_values(rng, reg, every=True)
    for name in ("estimate", "due", "project", "tags"):
        if rng.random() < 0.2:
            values.pop(name, None)  # missing: the default or null
    return Write("insert Task", "POST", "/v1/objects/Task", values)


def insert_project(rng, reg):
    name = rng.choice(PROJECT_NAMES) if rng.random() < 0.95 else ""  # "" is under minLength: 422
    return Write("insert Project", "POST", "/v1/objects/Project", {"name": name, "archived": rng.random() < 0.3})


def insert_tag(rng, reg):
    return Write("insert Tag", "POST", "/v1/objects/Tag", {"label": rng.choice(TAG_LABELS)})


def patch_task(rng, reg):
    task = rng.choice(reg.tasks)
    return Write("patch Task", "PATCH", f"/v1/objects/Task/{pk(task['_id'])}", task_values(rng, reg),
                 maybe_if_match(rng, task))


def put_task(rng, reg):
    task = rng.choice(reg.tasks)
    values = task_values(rng, reg, every=True)
    for name in ("priority", "done", "estimate", "due", "project", "tags"):
        if rng.random() < 0.25:
            values.pop(name)  # missing: back to the default or null
    return Write("put Task", "PUT", f"/v1/objects/Task/{pk(task['_id'])}", values, maybe_if_match(rng, task))


def delete_task(rng, reg):
    task = rng.choice(reg.tasks)
    return Write("delete Task", "DELETE", f"/v1/objects/Task/{pk(task['_id'])}", None, maybe_if_match(rng, task))


def delete_project(rng, reg):
    project = rng.choice(reg.projects)
    return Write("delete Project", "DELETE", f"/v1/objects/Project/{pk(project['_id'])}")


def delete_tag(rng, reg):
    tag = rng.choice(reg.tags)  # with tasks: 422 (deny); without: deleted
    return Write("delete Tag", "DELETE", f"/v1/objects/Tag/{pk(tag['_id'])}")


def batch_patch(rng, reg):
    values = rng.choice([{"priority": rng.randint(0, 5)}, {"done": rng.random() < 0.5},
                         {"estimate": rng.choice(ESTIMATES)}, {"due": rng.choice(DUES)},
                         {"title": rng.choice(TITLES)}, {"priority": rng.randint(0, 5), "done": False}])
    where = quote(rng.choice(BATCH_PATCH_WHERE), safe="")
    return Write("batch patch Task", "PATCH", f"/v1/objects/Task?where={where}", values)


def sweeping_patch(rng, reg):
    """A batch PATCH of every task (estimate or due: orders change in many windows at once):
    a large diff for every large window, sent while a slow reader is not reading."""
    values = {"estimate": rng.choice(ESTIMATES)} if rng.random() < 0.5 else {"due": rng.choice(DUES)}
    return Write("sweeping patch Task", "PATCH", "/v1/objects/Task?where=TRUEPREDICATE", values)


def batch_delete(rng, reg):
    where = quote(rng.choice(BATCH_DELETE_WHERE), safe="")
    return Write("batch delete Task", "DELETE", f"/v1/objects/Task?where={where}")


def rename_project(rng, reg):
    project = rng.choice(reg.projects)
    values = {"name": rng.choice(PROJECT_NAMES)} if rng.random() < 0.7 else {"archived": not project.get("archived")}
    return Write("change Project", "PATCH", f"/v1/objects/Project/{pk(project['_id'])}", values)


def relabel_tag(rng, reg):
    tag = rng.choice(reg.tags)
    return Write("relabel Tag", "PATCH", f"/v1/objects/Tag/{pk(tag['_id'])}", {"label": rng.choice(TAG_LABELS)})


def retag_task(rng, reg):
    """Adds or removes one tag of a task (the task's tags change, and the windows that sort
    or filter by tags)."""
    task = rng.choice(reg.tasks)
    tags = set(task.get("tags") or [])
    tag = rng.choice(reg.tags)["_id"]
    tags.symmetric_difference_update({tag})
    return Write("retag Task", "PATCH", f"/v1/objects/Task/{pk(task['_id'])}", {"tags": sorted(tags)})


def transaction(rng, reg):
    """Two to five operations saved at once: inserts with refs, updates, deletes."""
    ops, refs = [], 0
    for _ in range(rng.randint(2, 5)):
        choice = rng.random()
        if choice < 0.3 or not reg.tasks:
            refs += 1
            values = task_values(rng, reg, every=True)
            earlier_projects = [op["ref"] for op in ops if op.get("entity") == "Project"]
            if earlier_projects and rng.random() < 0.7:
                values["project"] = rng.choice(earlier_projects)
            ops.append({"op": "insert", "entity": "Task", "ref": f"r{refs}", "values": values})
        elif choice < 0.4:
            refs += 1
            ops.append({"op": "insert", "entity": "Project", "ref": f"r{refs}",
                        "values": {"name": rng.choice(PROJECT_NAMES)}})
        elif choice < 0.8:
            task = rng.choice(reg.tasks)
            ops.append({"op": "update", "object": task["_id"], "values": task_values(rng, reg)})
        else:
            ops.append({"op": "delete", "object": rng.choice(reg.tasks)["_id"]})
    return Write("transaction", "POST", "/v1/transactions", {"operations": ops})


def random_write(rng, reg):
    """A write chosen by weight; the weights lean to inserts or deletes to keep the number of
    tasks between TASKS_LOW and TASKS_HIGH."""
    n = len(reg.tasks)
    grow = 3 if n < TASKS_LOW else (0.3 if n > TASKS_HIGH else 1)
    shrink = 3 if n > TASKS_HIGH else (0.3 if n < TASKS_LOW else 1)
    table = [
        (insert_task, 6 * grow, True),
        (insert_project, 0.6 if len(reg.projects) < 10 else 0.1, True),
        (insert_tag, 0.5 if len(reg.tags) < 8 else 0.1, True),
        (patch_task, 10, reg.tasks),
        (put_task, 2, reg.tasks),
        (delete_task, 3 * shrink, reg.tasks),
        (delete_project, 0.15 * shrink, len(reg.projects) > 3),
        (delete_tag, 0.2, reg.tags),
        (batch_patch, 2, True),
        (batch_delete, 0.7 * shrink, True),
        (rename_project, 1.2, reg.projects),
        (relabel_tag, 0.8, reg.tags),
        (retag_task, 2, reg.tasks and reg.tags),
        (transaction, 3, True),
    ]
    makers = [(make, weight) for make, weight, possible in table if possible]
    make = rng.choices([m for m, _ in makers], [w for _, w in makers])[0]
    return make(rng, reg)
