"""The quick reader of the `fast` extra (storage/typed.py, msgspec): what it takes, it reads
into exactly the records the careful reader (model.run_from_json, the reference) makes, with
the same types and attributes; what the careful reader refuses, it never takes."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_big_files import big_run

from pytest_jaxperf import model
from pytest_jaxperf.model import Phases, RecordedTest, Remeasured, RunRecord
from pytest_jaxperf.storage import store

typed = pytest.importorskip("pytest_jaxperf.storage.typed")


def _tree(value: Any) -> Any:
    """`value` as nested tuples that tell apart what == does not: an int from a float, -0.0
    from 0.0, a list from a tuple, an attribute left to the class from one of the record's."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = tuple((f.name, _tree(getattr(value, f.name))) for f in dataclasses.fields(value))
        return (type(value).__name__, fields, tuple(sorted(vars(value))))
    if isinstance(value, dict):
        return ("dict", tuple((k, _tree(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(map(_tree, value)))
    return (type(value).__name__, repr(value))


def rich_run() -> RunRecord:
    """big_run() (every field; a marker, an environment of its own, a scaling entry, a failed
    test) with a confirmation and an entry of values of other types the careful reader takes."""
    run = big_run()
    first = next(iter(run.tests.values()))
    key = next(iter(first.functions))
    first.confirmation = Remeasured(
        functions={key: Phases(0.1, 0.2, 0.1, None)},
        repeats=3,
        seconds=1.5,
        left_out={"other at a.py:1": "not kept"},
        first={key: Phases(0.2, 0.3, 0.2, 0.3)},
    )
    return run


def _text(run: RunRecord) -> str:
    return store.dumps(run)


def baseline_run() -> RunRecord:
    """rich_run() as a baseline holds it (schema /7): no first-call seconds, the runtime
    statistics the rule reads and 40 rounds, eager counts alone (none where all 0), no wall
    seconds but where a test is gated on them (here one, by its marker)."""
    from pytest_jaxperf.storage.resave import baseline_form

    run = rich_run()
    walled = list(run.tests.values())[1]
    walled.marker = {**walled.marker, "compile_clock": "wall"}
    return RunRecord(run.environment, {k: baseline_form(v, "cpu") for k, v in run.tests.items()})


def test_the_baseline_form_leaves_out_what_each_reader_then_reads_as_none() -> None:
    tests = json.loads(_text(baseline_run()))["tests"].values()
    # The cases the mutations below start from: a test with wall seconds and without, an
    # eager block of counts alone and none, a runtime of what the rule reads.
    assert sorted("compile_s" in e for e in tests) == [False] * (len(tests) - 1) + [True]
    assert {tuple(sorted(e["eager"])) if "eager" in e else () for e in tests} == {
        (), tuple(sorted(model.COUNT_FIELDS))
    }  # fmt: skip
    runtimes = [b["runtime"] for e in tests for b in e["benchmarks"].values() if "runtime" in b]
    assert runtimes and all(
        set(r) == {"cpu_median_s", "median_s", "min_s", "samples_s"} for r in runtimes
    )


@pytest.mark.parametrize("schema", model.READABLE_SCHEMAS[:-1])
def test_an_older_schema_requires_what_a_baseline_now_leaves_out(schema: str) -> None:
    # Only from /7 on may a baseline leave out wall seconds, the eager block or runtime
    # statistics: the same text labelled older is refused by the careful reader, and left
    # to it by the quick one.
    data = model.run_to_json(baseline_run())
    data["schema"] = schema
    text = json.dumps(data, indent=2)
    assert typed.read_run(text.encode()) is None
    with pytest.raises(model.FormatError, match="missing field"):
        model.run_from_json(json.loads(text))


RUNS = {"run file": rich_run, "baseline": baseline_run}


def test_the_mirrors_hold_the_model_s_fields() -> None:
    for mirror, cls in typed.MIRRORS.items():
        assert [f.name for f in dataclasses.fields(mirror)] == [
            f.name for f in dataclasses.fields(cls)
        ]


@pytest.mark.parametrize("form", RUNS)
def test_a_rich_file_reads_as_the_careful_reader_reads_it(form: str) -> None:
    text = _text(RUNS[form]())
    got = typed.read_run(text.encode())
    assert got is not None
    assert _tree(got) == _tree(model.run_from_json(json.loads(text)))
    for nodeid, entry in json.loads(text)["tests"].items():
        one = typed.read_test(json.dumps(entry, indent=2).encode())
        assert _tree(one) == _tree(model.recorded_test_from_json(entry, nodeid))


def test_other_schemas_are_left_to_the_careful_reader(tmp_path: Path) -> None:
    data = model.run_to_json(big_run())
    data["schema"] = "pytest-jaxperf/4"
    assert typed.read_run(json.dumps(data, indent=2).encode()) is None
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data, indent=2))
    assert store.load(path) == model.run_from_json(data)


# -- mutations ---------------------------------------------------------------------------------
# Values put in place of one value of a file, as JSON text where json.dumps cannot write it.
_TEXTS = {"<big-float>": "1e999", "<big-int>": "1" + "0" * 400, "<huge-int>": "9" * 5000}
POOL: list[Any] = [
    -1, 0, 1, 3, 2.5, 3.0, -0.0, -2.5, True, False, None, "x", "", [], {}, [1], [1.5],
    [1, 2, 3], [1.0, 2.0, 3.0], {"a": 1}, 2**64, -(2**70), 2**62 + 1, 1e308,
    1.7976931348623157e308, 5e-324, float("nan"), float("inf"), *_TEXTS,
    {"kind": "scaling"}, "benchmark", "scaling", "\ud800",
]  # fmt: skip


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of every value below `value` (objects' members, lists' items)."""
    out = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        out.append((*path, key))
        out.extend(_nodes(child, (*path, key)))
    return out


def _mutated(data: Any, rng: random.Random) -> Any:
    data = json.loads(json.dumps(data))
    path = rng.choice(_nodes(data))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    how = rng.random()
    if how < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif how < 0.25:
        target = parent if isinstance(parent, dict) else data
        key = rng.choice(["zz", "kind", "environment", "marker", "confirmation"])
        # Not an integer json will not read, in what may be a field the reader leaves out:
        # see test_a_field_left_out_is_not_read.
        target[key] = rng.choice([v for v in POOL if v != "<huge-int>"])
    else:
        parent[path[-1]] = rng.choice(POOL)
    return data


def _dumps(data: Any, indent: int | None = None) -> str:
    text = json.dumps(data, indent=indent)
    for name, literal in _TEXTS.items():
        text = text.replace(json.dumps(name), literal)
    return text


def _careful(text: str, read: Any) -> Any:
    try:
        return _tree(read(json.loads(text)))
    except Exception as exc:  # noqa: BLE001 - the careful reader refused it: any error
        return f"refused: {type(exc).__name__}"


@pytest.mark.parametrize("form", RUNS)
@pytest.mark.parametrize("seed", range(2))
def test_a_value_the_careful_reader_refuses_is_never_taken(seed: int, form: str) -> None:
    # 80,000 mutations (seeds 0-199 of 400) found nothing more when this was written.
    rng = random.Random(seed)
    data = model.run_to_json(RUNS[form]())
    taken = refused = 0
    for _ in range(300):
        doc = _mutated(data, rng)
        text = _dumps(doc, indent=2)
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate: the file would hold it escaped
            text = _dumps(doc, indent=2).encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        expected = _careful(text, model.run_from_json)
        got = typed.read_run(text.encode())
        if got is None:
            refused += 1
        else:
            taken += 1
            assert _tree(got) == expected, text
        # One entry alone, as a lazily read baseline reads it.
        tests = doc.get("tests") if isinstance(doc, dict) else None
        if isinstance(tests, dict) and doc.get("schema") == model.SCHEMA:
            for nodeid, entry in list(tests.items())[:3]:
                entry_text = _dumps(entry)
                one = typed.read_test(entry_text.encode())
                if one is not None:
                    assert _tree(one) == _careful(
                        entry_text, lambda e, k=nodeid: model.recorded_test_from_json(e, k)
                    ), entry_text
    assert taken > 50 and refused > 150, (taken, refused)


def test_a_confirmation_is_read_by_the_careful_reader() -> None:
    text = _text(rich_run())
    assert '"confirmation": {' in text
    got = typed.read_run(text.encode())
    assert got is not None
    rec: RecordedTest = next(iter(got.tests.values()))
    assert type(rec.confirmation) is Remeasured
    broken = text.replace('"repeats": 3', '"repeats": -3')
    assert typed.read_run(broken.encode()) is None
    assert (
        typed.read_run(text.replace('"confirmation": {', '"confirmation": null, "x": {').encode())
        is None
    )


def test_a_field_left_out_is_not_read() -> None:
    # msgspec skips the value of a field the careful reader leaves out too (an unknown field
    # of a test entry, say) without making it a Python value, so an integer of more digits
    # than json reads (sys.get_int_max_str_digits()) there goes unnoticed, where json refuses
    # the file. Bytes that are not UTF-8 are told, as by every other parser.
    text = _text(big_run())
    at = text.index('"outcome": ')
    huge = text[:at] + '"zz": ' + "9" * 5000 + ", " + text[at:]
    assert typed.read_run(huge.encode()) == big_run()
    with pytest.raises(ValueError, match="4300 digits"):
        json.loads(huge)
    odd = text[:at].encode() + b'"zz": "\xff", ' + text[at:].encode()
    assert typed.read_run(odd) is None
    assert typed.read_run(text[:at].encode() + b'"zz": "\xc3\xa9", ' + text[at:].encode()) == (
        big_run()
    )


def test_an_environment_entry_decoded_twice_is_left_to_the_careful_reader() -> None:
    # msgspec keeps the last of a key twice, as json does; the entries it decodes are
    # counted, so that the careful reader refuses the file, naming the key.
    text = store.dumps(RunRecord({"jax": "0.10.2"}, {"t.py::test_a": RecordedTest(traces=1)}))
    assert typed.read_run(text.encode()) == RunRecord(
        {"jax": "0.10.2"}, {"t.py::test_a": RecordedTest(traces=1)}
    )
    line = text.index('    "jax"')
    assert typed.read_run((text[:line] + '    "jax": "0.9.0",\n' + text[line:]).encode()) is None
    block = text.index('  "environment"')
    again = '  "environment": {"jax": "0.9.0", "x": 1},\n'
    assert typed.read_run((text[:block] + again + text[block:]).encode()) is None
    # An environment left out, or empty, is read.
    assert typed.read_run(b'{"schema": "%s", "tests": {}}' % model.SCHEMA.encode()) == RunRecord()
