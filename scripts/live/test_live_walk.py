"""Tests of the walk's own parts that need no server: events applied to a held list, SSE
parsing, chunked bodies. Run: python3 -m unittest discover -s scripts/live"""
import asyncio
import json
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httpio  # noqa: E402
from fake_live_server import make_ops  # noqa: E402  (the fake server's diff: the contract's order of ops)
from livelist import ContractError, LiveList  # noqa: E402


def event(kind, event_id, **data):
    return {"event": kind, "id": str(event_id), "data": json.dumps(data)}


def obj(n, version=1, **values):
    return {"_id": f"Task/{n}", "_version": version, **values}


def snapshot(objects, token=5, more=False, limit=10):
    held = LiveList(limit)
    held.apply(event("snapshot", token, token=str(token), objects=objects, more=more), resuming=False)
    return held


def diff(start, end, ops, more=False):
    return event("diff", end, **{"from": str(start), "to": str(end), "ops": ops, "more": more})


class LiveListTests(unittest.TestCase):
    def test_ops_apply_in_order_each_index_in_the_list_the_ops_before_left(self):
        held = snapshot([obj(1), obj(2), obj(3)])
        held.apply(diff(5, 7, [{"op": "delete", "index": 0},  # 2 3
                               {"op": "insert", "index": 2, "object": obj(4)},  # 2 3 4
                               {"op": "move", "from": 0, "to": 2},  # 3 4 2
                               {"op": "update", "index": 2, "object": obj(2, 2)}], more=True), resuming=False)
        self.assertEqual(held.objects, [obj(3), obj(4), obj(2, 2)])
        self.assertEqual((held.token, held.more), (7, True))

    def test_a_diff_from_a_token_not_held_is_refused(self):
        held = snapshot([obj(1)])
        with self.assertRaisesRegex(ContractError, "while the client holds 5"):
            held.apply(diff(4, 7, []), resuming=False)

    def test_indexes_out_of_range_are_refused(self):
        for op in [{"op": "delete", "index": 1}, {"op": "insert", "index": 2, "object": obj(9)},
                   {"op": "move", "from": 0, "to": 1}, {"op": "update", "index": -1, "object": obj(1, 2)},
                   {"op": "delete", "index": True}]:
            with self.subTest(op=op), self.assertRaisesRegex(ContractError, "outside"):
                snapshot([obj(1)]).apply(diff(5, 6, [op]), resuming=False)

    def test_an_update_that_changes_nothing_or_names_another_object_is_refused(self):
        with self.assertRaisesRegex(ContractError, "exactly as the client holds it"):
            snapshot([obj(1)]).apply(diff(5, 6, [{"op": "update", "index": 0, "object": obj(1)}]), resuming=False)
        with self.assertRaisesRegex(ContractError, "carries Task/2"):
            snapshot([obj(1)]).apply(diff(5, 6, [{"op": "update", "index": 0, "object": obj(2)}]), resuming=False)

    def test_duplicates_and_lists_past_the_limit_are_refused(self):
        with self.assertRaisesRegex(ContractError, "twice"):
            snapshot([obj(1)]).apply(diff(5, 6, [{"op": "insert", "index": 0, "object": obj(1, 2)}]), resuming=False)
        with self.assertRaisesRegex(ContractError, "more than limit 1"):
            snapshot([obj(1)], limit=1).apply(diff(5, 6, [{"op": "insert", "index": 0, "object": obj(2)}]),
                                              resuming=False)

    def test_tokens_never_go_back_and_ids_match_tokens(self):
        held = snapshot([obj(1)], token=5)
        held.apply(event("progress", 8, token="8"), resuming=False)
        self.assertEqual(held.token, 8)
        with self.assertRaisesRegex(ContractError, "went backwards"):
            held.apply(event("progress", 7, token="7"), resuming=False)
        with self.assertRaisesRegex(ContractError, "is not its token"):
            held.apply(event("progress", 9, token="10"), resuming=False)
        with self.assertRaisesRegex(ContractError, "went backwards"):
            held.apply(event("reset", 6, token="6", objects=[], more=False), resuming=True)

    def test_a_stream_starts_with_a_snapshot_and_a_resume_is_answered_by_a_diff_or_a_reset(self):
        with self.assertRaisesRegex(ContractError, "not a snapshot"):
            LiveList(5).apply(event("progress", 3, token="3"), resuming=False)
        held = snapshot([obj(1)])
        with self.assertRaisesRegex(ContractError, "answered with a snapshot"):
            held.apply(event("snapshot", 9, token="9", objects=[], more=False), resuming=True)
        held.apply(event("reset", 9, token="9", objects=[obj(2)], more=True), resuming=True)
        self.assertEqual((held.objects, held.more, held.token), ([obj(2)], True, 9))

    def test_random_diffs_made_from_two_lists_turn_one_into_the_other(self):
        """The rules, applied to diffs made the way a server might (deletes, then moves and
        inserts front to back, then updates), give the new list."""
        rng = random.Random(7)
        for _ in range(300):
            old = [obj(n, rng.randint(1, 2)) for n in rng.sample(range(12), rng.randint(0, 8))]
            new = [obj(n, rng.randint(1, 2)) for n in rng.sample(range(12), rng.randint(0, 8))]
            held = snapshot(old, token=1)
            held.apply(diff(1, 2, make_ops(old, new)), resuming=False)
            self.assertEqual(held.objects, new)


class SSEParserTests(unittest.TestCase):
    def test_events_split_anywhere_comments_and_crlf(self):
        text = b": keep-alive\r\n\r\nevent: snapshot\r\nid: 3\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: progress\nid: 4\ndata: x\n\n"
        for cut in range(1, len(text)):
            parser = httpio.SSEParser()
            events = parser.feed(text[:cut]) + parser.feed(text[cut:])
            self.assertEqual(events, [{"event": "snapshot", "id": "3", "data": "{\"a\":\n1}"},
                                      {"event": "progress", "id": "4", "data": "x"}])
            self.assertEqual(parser.comments, 1)


class ChunkedTests(unittest.TestCase):
    def test_chunks_and_the_last_chunk(self):
        async def read(data):
            reader = asyncio.StreamReader()
            reader.feed_data(data)
            reader.feed_eof()
            return [c async for c in httpio.body_chunks(reader, {"transfer-encoding": "chunked"}, 1)]

        self.assertEqual(asyncio.run(read(b"3\r\nabc\r\n1;x=y\r\nd\r\n0\r\n\r\n")), [b"abc", b"d"])
        with self.assertRaises(httpio.HTTPError):
            asyncio.run(read(b"3\r\nabc\r\n"))  # closed before the last chunk


if __name__ == "__main__":
    unittest.main()
