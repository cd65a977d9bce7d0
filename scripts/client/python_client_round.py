#!/usr/bin/env python3
"""A typed Python client generated from the served OpenAPI document, used for a whole round.

Starts `managedstore serve --demo --store :memory:` on a free loopback port, reads
/v1/openapi.json (the document of the loaded model), generates a client with
openapi-python-client into a temporary folder, imports it, and with it inserts a Project and a
Task linked to it, fetches by predicate, reads one, follows a live query (server-sent events)
while it patches the task with If-Match and deletes it, sees a stale If-Match refused with 409,
and reads 404. Every answer is checked as the typed
model the generator made (`Task`, `ProjectFetchResult`, ...). Exit 0 when the round holds.
"""
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BINARY = os.environ.get("MANAGEDSTORE", ".build/debug/managedstore")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([BINARY, "serve", "--demo", "--store", ":memory:", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="managedstore-pyclient-")
    try:
        for _ in range(100):  # bounded: 10 s
            try:
                if urllib.request.urlopen(base + "/v1/readyz", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            sys.exit("the server did not get ready")
        document = os.path.join(work, "openapi.json")
        with urllib.request.urlopen(base + "/v1/openapi.json", timeout=5) as answer, open(document, "wb") as out:
            out.write(answer.read())
        generated = subprocess.run(["openapi-python-client", "generate", "--path", document, "--meta", "none",
                                    "--output-path", os.path.join(work, "tracker_client")],
                                   capture_output=True, text=True, timeout=120)
        if generated.returncode != 0:
            sys.exit(f"openapi-python-client failed:\n{generated.stdout}\n{generated.stderr}")
        # The YAML form is the same document.
        import yaml
        with urllib.request.urlopen(base + "/v1/openapi.yaml", timeout=5) as answer:
            as_yaml = yaml.safe_load(answer.read())
        with open(document) as f:
            if as_yaml != json.load(f):
                sys.exit("python client: /v1/openapi.yaml is not the document /v1/openapi.json is")
        sys.path.insert(0, work)
        round_trip(base)
        print("python client: openapi.yaml is openapi.json; a client generated from /v1/openapi.json; insert, fetch, get, a live query followed through patch and delete, stale patch 409, 404: ok")
    finally:
        server.terminate()
        server.wait(timeout=15)
        shutil.rmtree(work, ignore_errors=True)


def round_trip(base):
    client_module = importlib.import_module("tracker_client")
    models = importlib.import_module("tracker_client.models")
    insert_project = importlib.import_module("tracker_client.api.project.insert_project")
    insert_task = importlib.import_module("tracker_client.api.task.insert_task")
    fetch_task = importlib.import_module("tracker_client.api.task.fetch_task")
    get_task = importlib.import_module("tracker_client.api.task.get_task")
    patch_task = importlib.import_module("tracker_client.api.task.patch_task")
    delete_task = importlib.import_module("tracker_client.api.task.delete_task")
    client = client_module.Client(base_url=base, raise_on_unexpected_status=True)

    project = insert_project.sync(client=client, body=models.ProjectInsert(name="Apollo"))
    check(isinstance(project, models.Project), f"insert Project answered {project!r}")
    check(project.field_id.startswith("Project/") and project.field_version == 1, f"the new project: {project!r}")

    task = insert_task.sync(client=client, body=models.TaskInsert(title="Ship it", priority=3, project=project.field_id))
    check(isinstance(task, models.Task), f"insert Task answered {task!r}")
    check(task.title == "Ship it" and task.priority == 3 and task.project == project.field_id and task.done is False,
          f"the new task: {task.to_dict()}")
    pk = int(task.field_id.split("/")[1])

    page = fetch_task.sync(client=client, where='title BEGINSWITH[c] "ship"')
    check(isinstance(page, models.TaskFetchResult), f"fetch answered {page!r}")
    check([t.field_id for t in page.objects] == [task.field_id], f"fetch found {[t.to_dict() for t in page.objects]}")

    got = get_task.sync(pk, client=client)
    check(isinstance(got, models.Task) and got.to_dict() == task.to_dict(), f"get answered {got!r}")

    # Follow a live query while the task changes: the snapshot holds it, the patch is an update
    # at its index, and the delete below removes it (the History-Token of each write says which
    # event carries it).
    live = client.get_httpx_client().stream("GET", "/v1/objects/Task/live",
                                            params={"where": "priority >= 3", "sort": "title", "fields": "title,done"},
                                            headers={"Accept": "text/event-stream"}, timeout=30)
    stream = live.__enter__()
    check(stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream"),
          f"live query answered {stream.status_code} {stream.headers}")
    events = sse_events(stream.iter_lines())
    kind, event_id, snapshot = next(events)
    check(kind == "snapshot" and [o["_id"] for o in snapshot["objects"]] == [task.field_id] and snapshot["more"] is False,
          f"the live query's first event: {kind} {snapshot}")

    detailed = patch_task.sync_detailed(pk, client=client, body=models.TaskValues(done=True), if_match='"1"')
    patched = detailed.parsed
    check(isinstance(patched, models.Task) and patched.done is True and patched.field_version == 2, f"patch answered {patched!r}")
    check(patched.priority == 3, f"a patch of done changed the priority: {patched.to_dict()}")
    ops = ops_until(events, detailed.headers["History-Token"])
    check(ops == [{"op": "update", "index": 0, "object": {"_id": task.field_id, "_version": 2, "title": "Ship it", "done": True}}],
          f"the live query's diff for the patch: {ops}")

    stale = patch_task.sync_detailed(pk, client=client, body=models.TaskValues(priority=1), if_match='"1"')
    check(stale.status_code == 409 and isinstance(stale.parsed, models.ConflictProblem), f"a stale patch answered {stale.status_code}: {stale.content!r}")

    deleted = delete_task.sync_detailed(pk, client=client)
    check(deleted.status_code == 204, f"delete answered {deleted.status_code}")
    ops = ops_until(events, deleted.headers["History-Token"])
    check(ops == [{"op": "delete", "index": 0}], f"the live query's diff for the delete: {ops}")
    live.__exit__(None, None, None)
    gone = get_task.sync_detailed(pk, client=client)
    check(gone.status_code == 404 and isinstance(gone.parsed, models.Problem), f"get after delete answered {gone.status_code}")
    check(json.loads(gone.content)["code"] == "not-found", f"the problem: {gone.content!r}")


def sse_events(lines):
    """(event, id, data) of each server-sent event; comment lines (keep-alives) skipped."""
    kind, event_id, data = None, None, []
    for line in lines:
        if line == "":
            if kind is not None:
                yield kind, event_id, json.loads("\n".join(data))
            kind, event_id, data = None, None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                kind = value
            elif field == "id":
                event_id = value
            elif field == "data":
                data.append(value)


def ops_until(events, token):
    """The ops of the diffs up to the event at `token` (a write's History-Token), progress skipped."""
    ops = []
    for kind, event_id, data in events:
        check(kind in ("diff", "progress"), f"the live query sent {kind}: {data}")
        if kind == "diff":
            ops += data["ops"]
        if int(event_id) >= int(token):
            return ops
    check(False, "the live query ended")


def check(condition, message):
    if not condition:
        sys.exit("python client: " + message)


if __name__ == "__main__":
    main()
