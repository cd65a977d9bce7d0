"""A live query's answer as a client holds it, and the contract's rules for changing it.

Each event of the stream goes through LiveList.apply, which raises ContractError when the
event cannot be applied as the contract says (an index out of range, a diff from a token the
client does not hold, an update that changes nothing, a token going backwards, ...).
Pure code, no I/O: scripts/live/test_live_walk.py tests it alone.
"""
import json


class ContractError(Exception):
    """The stream did something the contract rules out."""


def token_int(text, what):
    """History tokens are whole numbers sent as strings; compared as numbers."""
    if not isinstance(text, str) or not text.isdigit():
        raise ContractError(f"{what} is not a token (a whole number as a string): {text!r}")
    return int(text)


def short(obj):
    """An object as a short text for logs: its id and version."""
    if not isinstance(obj, dict):
        return repr(obj)[:60]
    return f"{obj.get('_id')}v{obj.get('_version')}"


class LiveList:
    def __init__(self, limit):
        self.limit = limit
        self.objects = None  # None until the first snapshot
        self.more = None
        self.token = None  # the token held, an int

    # The events. Each returns a short description for the subscription's log.

    def apply(self, event, resuming):
        """Applies one event (a dict from SSEParser). resuming: this is the first event of a
        connection that asked to resume from self.token."""
        kind = event["event"]
        try:
            data = json.loads(event["data"])
        except ValueError:
            raise ContractError(f"{kind} event whose data is not JSON: {event['data'][:200]!r}") from None
        if not isinstance(data, dict):
            raise ContractError(f"{kind} event whose data is not a JSON object: {event['data'][:200]!r}")
        if self.objects is None and kind != "snapshot":
            raise ContractError(f"the first event of a new stream is {kind!r}, not a snapshot")
        if resuming and kind == "snapshot":
            raise ContractError(f"a resume from {self.token} was answered with a snapshot (the contract: one diff, or a reset)")
        if kind in ("snapshot", "reset"):
            return self._replace(kind, event, data)
        if kind == "diff":
            return self._diff(event, data)
        if kind == "progress":
            return self._progress(event, data)
        raise ContractError(f"unknown event type {kind!r}")

    def _check_id(self, event, token, kind):
        if event["id"] is None or token_int(event["id"], f"the id of a {kind} event") != token:
            raise ContractError(f"a {kind} event's id {event['id']!r} is not its token {token}")

    def _check_forward(self, token, kind):
        if self.token is not None and token < self.token:
            raise ContractError(f"a {kind} event at token {token} while the client holds {self.token}: the token went backwards")

    def _replace(self, kind, event, data):
        token = token_int(data.get("token"), f"a {kind}'s token")
        self._check_id(event, token, kind)
        if kind == "reset":
            self._check_forward(token, kind)
        objects, more = data.get("objects"), data.get("more")
        if not isinstance(objects, list) or not isinstance(more, bool):
            raise ContractError(f"a {kind} without an objects list and a boolean more: {str(data)[:200]}")
        self.objects, self.more, self.token = list(objects), more, token
        self._check_list(kind)
        return f"{kind} @{token} n={len(objects)} more={more}"

    def _progress(self, event, data):
        token = token_int(data.get("token"), "a progress token")
        self._check_id(event, token, "progress")
        self._check_forward(token, "progress")
        self.token = token
        return f"progress @{token}"

    def _diff(self, event, data):
        start = token_int(data.get("from"), "a diff's from")
        end = token_int(data.get("to"), "a diff's to")
        self._check_id(event, end, "diff")
        if start != self.token:
            raise ContractError(f"a diff from {start} to {end} while the client holds {self.token}")
        if end <= start:
            raise ContractError(f"a diff from {start} to {end}: to is not after from")
        ops, more = data.get("ops"), data.get("more")
        if not isinstance(ops, list) or not isinstance(more, bool):
            raise ContractError(f"a diff without an ops list and a boolean more: {str(data)[:200]}")
        done = [self._op(op, n) for n, op in enumerate(ops)]
        self.more, self.token = more, end
        self._check_list("diff")
        return f"diff {start}->{end} more={more} [" + ", ".join(done) + "]"

    def _op(self, op, n):
        """One op, against the list as the ops before it left it."""
        kind, objects = op.get("op") if isinstance(op, dict) else None, self.objects

        def index(name, size):
            value = op.get(name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
                raise ContractError(f"op {n} {op!r:.200}: {name} {value!r} is outside 0..{size - 1} "
                                    f"(the list holds {len(objects)} objects)")
            return value

        def carried():
            obj = op.get("object")
            if not isinstance(obj, dict) or "_id" not in obj:
                raise ContractError(f"op {n} ({kind}) carries no object with an _id: {op!r:.200}")
            return obj

        if kind == "delete":
            i = index("index", len(objects))
            gone = objects.pop(i)
            return f"del {i} {short(gone)}"
        if kind == "insert":
            i = index("index", len(objects) + 1)
            obj = carried()
            objects.insert(i, obj)
            return f"ins {i} {short(obj)}"
        if kind == "move":
            i = index("from", len(objects))
            j = index("to", len(objects))
            obj = objects.pop(i)
            objects.insert(j, obj)
            return f"mov {i}->{j} {short(obj)}"
        if kind == "update":
            i = index("index", len(objects))
            obj = carried()
            if obj.get("_id") != objects[i].get("_id"):
                raise ContractError(f"op {n}: an update at {i} carries {obj.get('_id')} but the client holds "
                                    f"{objects[i].get('_id')} there")
            if obj == objects[i]:
                raise ContractError(f"op {n}: an update at {i} carries {short(obj)} exactly as the client holds it "
                                    f"(an update comes only when the object's returned JSON changed)")
            objects[i] = obj
            return f"upd {i} {short(obj)}"
        raise ContractError(f"op {n} is not delete, insert, move or update: {op!r:.200}")

    def _check_list(self, after):
        if len(self.objects) > self.limit:
            raise ContractError(f"after a {after} the list holds {len(self.objects)} objects, more than limit {self.limit}")
        ids = [obj.get("_id") if isinstance(obj, dict) else None for obj in self.objects]
        if None in ids:
            raise ContractError(f"after a {after} the list holds something without an _id")
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ContractError(f"after a {after} the list holds {', '.join(twice)} twice")
