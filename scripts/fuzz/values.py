"""Hostile values, and a JSON writer that can write what `json.dumps` will not: numbers as any
text (`1e-9223372036854775808`, 400-digit mantissas), duplicate keys, invalid UTF-8 and raw garbage.
"""
import json


class Raw:
    """Written as is (a number's text, or garbage)."""
    def __init__(self, text):
        self.text = text  # bytes or str

    def __repr__(self):
        return f"Raw({self.text!r})"


class Dup:
    """A JSON object whose members are written in order, duplicates included."""
    def __init__(self, pairs):
        self.pairs = list(pairs)


def dump(value):
    """JSON text (bytes) of `value`: dict, list, str, int, float, bool, None, Raw, Dup."""
    out = bytearray()
    _dump(value, out)
    return bytes(out)


def _dump(value, out):
    if isinstance(value, Raw):
        out += value.text if isinstance(value.text, bytes) else value.text.encode("utf-8", "surrogatepass")
    elif isinstance(value, Dup):
        out += b"{"
        for i, (k, v) in enumerate(value.pairs):
            if i:
                out += b","
            _dump_str(k, out)
            out += b":"
            _dump(v, out)
        out += b"}"
    elif isinstance(value, dict):
        _dump(Dup(value.items()), out)
    elif isinstance(value, (list, tuple)):
        out += b"["
        for i, v in enumerate(value):
            if i:
                out += b","
            _dump(v, out)
        out += b"]"
    elif isinstance(value, str):
        _dump_str(value, out)
    elif value is True:
        out += b"true"
    elif value is False:
        out += b"false"
    elif value is None:
        out += b"null"
    elif isinstance(value, (int, float)):
        out += json.dumps(value).encode()
    else:
        raise TypeError(type(value))


def _dump_str(text, out):
    try:
        out += json.dumps(text, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: written as \ud800 escapes (valid JSON syntax, not valid Unicode).
        out += json.dumps(text, ensure_ascii=True).encode("ascii")


# Numbers as JSON text; the ones JSON's grammar allows, and some it does not.
HOSTILE_NUMBERS = [
    "1e-9223372036854775808", "1e9223372036854775807", "1e-9223372036854775807", "1e9223372036854775808",
    "-1e-9223372036854775808", "0.1e-2147483648", "1e2147483648", "1E-2147483649", "2.5e-9223372036854775808",
    "-0", "-0.0", "0", "0.0", "0e0", "-0e-0", "1E400", "-1E400", "1e-400", "-1e-400", "4.9e-324", "1.7976931348623157e308",
    "1" + "0" * 399, "-" + "9" * 400, "0." + "0" * 398 + "1", "1." + "1" * 400, "1" * 200 + "e-200",
    "1" + "0" * 38 + "e-38", "99999999999999999999999999999999999999", "123456789012345678901234567890123456789",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "-18446744073709551617", "340282366920938463463374607431768211456",
    "32767", "32768", "-32769", "2147483647", "2147483648", "-2147483649", "5", "6", "-1", "2.0", "2.5", "5e0", "0.5e1",
    "1e3", "1E+2", "1e-0", "3.4028235e38", "3.5e38", "1.0000000000000002", "9007199254740993",
    "1e10000", "1e-10000", "1e9999", "1e-9999", "1e127", "1e-128", "1e128", "1e-129",
]
# Text a strict JSON parser must refuse.
INVALID_NUMBERS = ["01", "-", "+1", ".5", "5.", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "1_000", "1.2.3", "--1", "1e1e1", "１"]

LONG = "x" * 100_000
HOSTILE_STRINGS = [
    "", " ", "x", "\u0000", "a\u0000b", "\ud800", "\udfff", "a\ud800b", "\ud83d", "e\u0301", "e" + "\u0301" * 1000,
    "\u202eRTL\u202c", "مرحبا", "שלום", "😀", "👨‍👩‍👧‍👦", "🏳️‍🌈" * 50, "\ufeff", "\uffff", "\U0010ffff", "\t\n\r",
    "\\", "\"", "'", "%", "_", "*", "?", "${x}", "%@", "%K", "%d", "%s%s%s", "\u2028\u2029", "a" * 199, "a" * 200, "a" * 201,
    "x" * 1000, LONG, "null", "true", "0", "Task/1", "Task/t1", "Project/1", "Tag/1", "2024-01-01T00:00:00Z",
    "2024-02-30T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z", "2024-01-01T00:00:00+99:99",
    "1e-9223372036854775808", "1e400", "DROP TABLE ZTASK; --", "' OR 1=1 --", "\" OR \"\"=\"", "a*b?c",
    "(a+)+b", "[[[", "\\Q", "(?x)#", "Ω≈ç√∫", "ǅ", "ß", "İ", "ﬃ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]
# Byte sequences that are not UTF-8 (written raw inside a JSON string).
INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf8\x88\x80\x80\x80", b"\x80", b"a\x00b"]

OBJECT_IDS = [
    "Task/0", "Task/-1", "Task/99999999999999999999", "Nope/1", "Task/", "/1", "/", "", "Task", "Task/1/2", "Task//1",
    "task/1", "TASK/1", "Task/ 1", "Task/1 ", " Task/1", "Task/+1", "Task/01", "Task/1e3", "Task/1.0", "Task/0x10",
    "Task/9223372036854775807", "Task/9223372036854775808", "Task/-9223372036854775808", "Task/t1", "Task/t0",
    "Project/1", "Tag/1", "Project/999999", "Task/\u0661", "Task/１", "Tâsk/1", "Task/1\u0000", "_Task/1",
    "managedstore://x/Task/p1", "Task%2F1",
]
VERSIONS = [0, -1, 1, 2, 3, 9223372036854775807, Raw("9223372036854775808"), Raw("-9223372036854775809"),
            Raw("1e-9223372036854775808"), Raw("1e9223372036854775807"), Raw("1.5"), Raw("1.0"), Raw("1e0"), Raw("1E400"),
            Raw("-0"), "1", "\"1\"", "", None, True, [], {}, [1], 1.5]
IF_MATCH = ['"1"', '"2"', '"0"', '"-1"', '"9223372036854775807"', '"9223372036854775808"', '"99999999999999999999"', "*",
            'W/"1"', "W/", '"', '""', '"1', '1"', "1", "-1", '"1", "2"', '"1e3"', '"1.0"', '"abc"', " ", "", '"\x7f"',
            'W/W/"1"', '"+1"', '" 1"', '"１"', '*,*', "W/\"\"", '"1e-9223372036854775808"']

PREDICATE_KEYS = ["title", "priority", "done", "estimate", "due", "project", "tags", "project.name", "project.archived",
                  "tags.label", "tags.@count", "project.tasks.title", "project.tasks.@count", "tags.tasks.priority",
                  "name", "label", "nope", "tasks", "tasks.title", "_id", "_version", "_pk", "Z_PK", "SELF", "self",
                  "priority.foo", "title.length", "@count", "tags.@sum.priority", "tags.@avg.priority", "tags.@max.label",
                  "project.name.foo", "title.@count", "tasks.@count", "tasks.tags.label", "tasks.project.tasks.title"]
OPERATORS = ["==", "=", "!=", "<>", "<", ">", "<=", ">=", "=<", "=>", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE",
             "MATCHES", "IN", "BETWEEN", "BEGINSWITH[c]", "CONTAINS[cd]", "LIKE[d]", "MATCHES[c]", "==[c]", "<[cd]",
             "CONTAINS[x]", "CONTAINS[]", "BEGINSWITH[cdcd]", "&&", "||", "AND", "OR", "IN[c]"]
PREDICATE_VALUES = [
    '"x"', '""', '"re"', '"Apollo"', "nil", "NULL", "YES", "NO", "TRUE", "FALSE", "0", "1", "5", "-1", "2.5", "1e-9223372036854775808",
    "1e9223372036854775807", "9223372036854775808", "-9223372036854775809", "1" + "0" * 400, "1E400", "1e-400", "-0", "0.1e-2147483648",
    '"Project/1"', '"Task/1"', '"Tag/1"', '"Nope/1"', '"Project/0"', '"2024-01-01T00:00:00Z"', '"not a date"',
    'CAST(0, "NSDate")', 'CAST(1e308, "NSDate")', 'CAST(-1e308, "NSDate")', 'CAST(1e-9223372036854775808, "NSDate")',
    'CAST("x", "NSDate")', 'CAST(1, "NSNumber")', 'CAST(nil, "NSDate")', 'CAST(9223372036854775807, "NSDate")',
    '{1, 2}', '{}', '{"a", "b"}', '{1, "a", nil}', '{{1}}', '{1, 2, 3}', "$x", "%@", "%K", "%d", "%f", "%%",
    '"(a+)+b"', '"^[A-Z].*"', '"["', '"(?x)#"', '"\\\\Q"', '"a\\\\"', "'single'", '"\\u0000"', '"\\ud800"', '"😀"',
    '"e\u0301"', '"\u202e"', "title", "priority", "SELF", "FUNCTION(x, \"y\")", "@count", "tags.@count",
]


def hostile_scalar(rng, depth=0):
    """Any JSON value at all, hostile leaning."""
    kind = rng.random()
    if kind < 0.35:
        return Raw(rng.choice(HOSTILE_NUMBERS))
    if kind < 0.6:
        return rng.choice(HOSTILE_STRINGS)
    if kind < 0.65:
        return Raw(b'"' + rng.choice(INVALID_UTF8) + b'"')
    if kind < 0.7:
        return Raw(rng.choice(INVALID_NUMBERS))
    if kind < 0.8:
        return rng.choice([None, True, False, [], {}, [None], {"": None}, [[[]]], 0, 1, -1])
    if kind < 0.9 and depth < 2:
        return rng.choice([[hostile_scalar(rng, depth + 1)], {"_id": hostile_scalar(rng, depth + 1)},
                           {rng.choice(HOSTILE_STRINGS[:12]): hostile_scalar(rng, depth + 1)}])
    return rng.choice(OBJECT_IDS)


def deep(rng, levels=None):
    levels = levels or rng.choice([63, 64, 65, 100, 512, 513, 5000, 100_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    return Raw(opener * levels + b"1" + closer * levels)
