"""The adaptive engine's parts (issue 19): the tracer count it steers by, the share of time
each property gets, the inputs it makes, how it reads its workers, and its charts. The whole
campaign is tested in ``test_fuzz.py``."""

from __future__ import annotations

import collections
import json
import random
import time
import unittest
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from practice_loop.harness import fuzz_adaptive, fuzz_charts, fuzz_worker
from practice_loop.harness.fuzz_worker import (
    ARITH_MAX,
    FLOOR_EVERY,
    FLOOR_SHARE,
    MAX_INPUT,
    ArcCounter,
    Property,
    Worker,
    mutated,
    origin_of,
    source_integers,
    step_a_number,
    write_a_literal,
)
from practice_loop.harness.hypothesis_internals import fuzz_target_of, in_process_run_of

KERNEL = Path(fuzz_worker.__file__).resolve().parents[1] / "kernel"


def test_the_arc_count_grows_when_new_code_runs_and_only_then():
    """The count is read from coverage.py's collector, not a published API: this fails by
    name if a release moves it."""
    from practice_loop.harness.examples import shipped_examples
    from practice_loop.kernel import practice_case

    arcs = ArcCounter([KERNEL])
    frames = [example.frame for example in shipped_examples()]
    arcs.start()
    practice_case(frames[0])
    arcs.stop()
    first = arcs.count()
    arcs.start()
    practice_case(frames[0])  # the same path again: nothing new
    arcs.stop()
    assert arcs.count() == first > 0
    arcs.start()
    practice_case(frames[1])  # a runnable frame: the proof's path, never run before
    arcs.stop()
    assert arcs.count() > first
    traced = arcs.count()
    practice_case(frames[2])  # a path of its own, but untraced: not counted
    assert arcs.count() == traced


def _properties(count: int) -> list[Property]:
    return [Property(f"t::p{i}", lambda data: data) for i in range(count)]


def _worker(properties: list[Property], seed: int = 0) -> Worker:
    return Worker(
        properties, open("/dev/null", "w"), seed=seed, deadline=0.0, started=time.monotonic(),
        arcs=ArcCounter([KERNEL]), database=None, test_timeout=60, hang=None,
    )  # fmt: skip


def test_time_goes_to_discovery_but_every_property_keeps_its_floor_share():
    properties = _properties(10)
    properties[3].recent = 50.0  # the one still finding new behaviour
    worker = _worker(properties, seed=1)
    chosen = collections.Counter(worker.choose().nodeid for _ in range(20_000))
    floor = FLOOR_SHARE / len(properties)
    assert chosen["t::p3"] / 20_000 > 1 - FLOOR_SHARE
    for prop in properties:
        assert chosen[prop.nodeid] / 20_000 >= 0.8 * floor, prop.nodeid


def test_the_floor_is_a_schedule_every_property_runs_first_and_then_in_turn():
    """Issue 19 ("never below a floor share"): however discovery weighs, each property gets
    its first slice before any weighting, and one slice in every FLOOR_EVERY * N after that.
    A floor drawn at random held only on average: in a 150 s search of 137 properties, 57
    never ran (benchmarks/bench_fuzz.py compare)."""
    properties = _properties(137)
    properties[3].recent = 1e9  # one property finds everything
    worker = _worker(properties, seed=5)
    first = [worker.choose().nodeid for _ in range(137)]
    assert sorted(first) == sorted(prop.nodeid for prop in properties)
    window = FLOOR_EVERY * len(properties)
    for _ in range(3):
        chosen = collections.Counter(worker.choose().nodeid for _ in range(window))
        assert all(chosen[prop.nodeid] >= 1 for prop in properties)
        assert chosen["t::p3"] >= window - len(properties)


def test_with_no_discovery_anywhere_the_properties_share_alike():
    worker = _worker(_properties(4), seed=2)
    chosen = collections.Counter(worker.choose().nodeid for _ in range(8_000))
    assert all(1_700 < n < 2_300 for n in chosen.values()) and len(chosen) == 4


@given(
    corpus=st.lists(st.binary(max_size=300), max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_inputs_are_bounded_and_replayable_from_the_seed(corpus, seed):
    one = mutated(corpus, random.Random(seed))
    assert type(one) is bytes and len(one) <= MAX_INPUT
    assert mutated(corpus, random.Random(seed)) == one


def test_the_dictionary_is_the_packages_integer_literals_not_its_harness(tmp_path):
    package = tmp_path / "package"
    (package / "kernel").mkdir(parents=True)
    (package / "harness").mkdir()
    (package / "kernel" / "gate.py").write_text(
        "LIMIT = 2600\nif x >= 4_000 and x < -4400 or x in (0, 1, True, 1.5, 2**40):\n    pass\n"
    )
    (package / "kernel" / "broken.py").write_text("def (:\n    777\n")
    (package / "harness" / "engine.py").write_text("SLICE = 31337\n")
    assert source_integers(package) == (2, 40, 2600, 4000, 4400)
    assert {256, 10_000} <= set(source_integers(KERNEL.parent))  # docs/adr/0003, 0005 caps


def test_a_dictionary_literal_written_over_the_input_is_the_integer_hypothesis_draws():
    """The numeric mutations rest on how ``fuzz_one_input`` reads a bounded integer: as
    many big-endian bytes as its range needs, added to its minimum. A release that reads
    integers otherwise fails here by name, not as a slower campaign."""
    seen: list[int] = []

    @given(st.integers(0, 10_000))
    def window(x):
        seen.append(x)

    run = window.hypothesis.fuzz_one_input
    rnd = random.Random(7)
    corpus = [run(bytes(2))]
    hits = 0
    for _ in range(2_000):
        run(mutated(corpus, rnd, (2600,)))
        hits += seen[-1] in (2599, 2600, 2601)
    # Without the dictionary a value in that window comes once in about 3,300 inputs.
    assert hits >= 20, hits
    seen.clear()
    rnd = random.Random(7)
    for _ in range(2_000):
        run(mutated(corpus, rnd))
    assert sum(x in (2599, 2600, 2601) for x in seen) <= 3


@given(data=st.binary(min_size=1, max_size=16), seed=st.integers(0, 2**32 - 1))
def test_a_step_moves_one_number_by_at_most_arith_max(data, seed):
    stepped = bytearray(data)
    step_a_number(stepped, random.Random(seed))
    padded = data + bytes(4)
    for width in (1, 2, 4):
        for start in range(len(data)):
            window = slice(start, start + width)
            if (
                stepped[:start] != data[:start]
                or stepped[start + width :] != padded[start + width : len(stepped)]
            ):
                continue
            before = int.from_bytes(padded[window], "big")
            after = int.from_bytes(bytes(stepped[window]).ljust(width, b"\0"), "big")
            distance = min((after - before) % 256**width, (before - after) % 256**width)
            if 1 <= distance <= ARITH_MAX and len(stepped) == max(len(data), start + width):
                return
    raise AssertionError(f"{data.hex()} became {bytes(stepped).hex()}")


@given(
    data=st.binary(min_size=1, max_size=16),
    literal=st.integers(2, 2**32 - 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_literal_or_its_neighbour_is_written_big_endian(data, literal, seed):
    written = bytearray(data)
    write_a_literal(written, random.Random(seed), (literal,))
    wanted = {n.to_bytes(w, "big") for n in (literal - 1, literal, literal + 1)
              for w in range(1, 6) if n < 256**w and (w == 1 or n >= 256 ** (w - 2))}  # fmt: skip
    assert any(bytes(written[i : i + len(b)]) == b for b in wanted for i in range(len(written)))


def test_a_known_failure_is_replayed_once_reported_as_known_and_not_saved_again(tmp_path):
    """A failure kept by an earlier campaign: run once at start, a `known` finding, nothing
    written back; a new failure is saved under the property's own key."""
    saved: dict[bytes, list[bytes]] = collections.defaultdict(list)

    class Database:
        def fetch(self, key):
            return list(saved[key])

        def save(self, key, value):
            saved[key].append(value)

    calls: list[bytes] = []

    def failing(data: bytes) -> bytes:
        calls.append(data)
        raise AssertionError("planted")

    prop = Property("t::failing", failing)
    saved[prop.key].append(b"old input")
    record = tmp_path / "record.jsonl"
    with open(record, "w") as handle:
        worker = Worker(
            [prop], handle, seed=0, deadline=0.0, started=time.monotonic(),
            arcs=ArcCounter([KERNEL]), database=Database(), test_timeout=60, hang=None,
        )  # fmt: skip
        worker.replay_known()
        worker._run_one(prop, b"new input")  # the same origin: not a second finding
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    findings = [line for line in lines if line["event"] == "finding"]
    assert [(f["known"], bytes.fromhex(f["input"])) for f in findings] == [(True, b"old input")]
    assert calls == [b"old input", b"new input"]
    assert saved[prop.key] == [b"old input"]
    assert findings[0]["origin"].startswith("AssertionError at test_fuzz_worker.py:")


def test_a_failure_is_named_by_its_type_and_the_line_that_raised_it():
    try:
        raise KeyError("x")
    except KeyError as error:
        origin = origin_of(error)
    assert origin.startswith("KeyError at test_fuzz_worker.py:")


class _Item:
    """The parts of a pytest item that ``fuzz_target_of`` reads."""

    def __init__(self, obj, fixturenames=(), params=None, nodeid="t.py::x"):
        self.obj = obj
        self.fixturenames = list(fixturenames)
        self.nodeid = nodeid
        if params is not None:
            self.callspec = type("CallSpec", (), {"params": params})()


@given(st.integers())
def _property(x):
    assert x != 12345


@given(st.text())
def _parametrized(k, s):
    assert len(s) * k != 6


def test_a_test_taking_fixtures_is_left_to_pytest_with_the_reason():
    found = fuzz_target_of(_Item(_property, ["tmp_path"]))
    assert found == "it takes pytest fixtures (tmp_path)"
    assert fuzz_target_of(_Item(lambda: None)) is None  # not a Hypothesis test


def test_a_parametrized_target_runs_with_its_parameters_bound():
    target = fuzz_target_of(_Item(_parametrized, ["k"], {"k": 3}, "t.py::x[3]"))
    failures = 0
    rnd = random.Random(0)
    for _ in range(3000):
        try:
            target(rnd.randbytes(64))
        except AssertionError:
            failures += 1
    assert failures > 0  # only k=3 with two characters fails: the binding reached the test
    plain = fuzz_target_of(_Item(_property))
    assert plain(bytes(64)) is not None


def test_a_generation_run_is_the_tests_own_search_seeded_and_sized_as_asked():
    """Issue 19: a generation slice runs Hypothesis's own search in-process, as many cases
    as asked (no more), the same cases for the same seed, and leaves the test's settings as
    they were."""
    drawn: list[int] = []

    @given(st.integers(0, 10_000))
    def probe(x):
        drawn.append(x)

    run = in_process_run_of(_Item(probe))
    before = probe._hypothesis_internal_use_settings
    ran, valid = run(Phase.generate, 30, 7)
    first = list(drawn)
    assert ran == valid == len(first) and 0 < ran <= 30
    drawn.clear()
    assert run(Phase.generate, 30, 7) == (ran, valid) and drawn == first
    drawn.clear()
    run(Phase.generate, 30, 8)
    assert drawn != first
    assert probe._hypothesis_internal_use_settings is before
    assert in_process_run_of(_Item(_property, ["tmp_path"])) is None
    assert in_process_run_of(_Item(lambda: None)) is None


def test_a_generated_failure_is_saved_where_pytests_run_of_the_item_replays_it():
    """The confirmation round replays a generated failure with an ordinary pytest run of the
    item: the generation run must save it under that item's key (a parametrized item's
    key holds its node id, as Hypothesis's pytest plugin adds it)."""
    database = InMemoryExampleDatabase()

    @settings(database=database, deadline=None)
    @given(st.integers(0, 10_000))
    def needle(k, x):
        assert not (k == 2 and 6150 <= x < 6170)

    run = in_process_run_of(_Item(needle, ["k"], {"k": 2}, "t.py::needle[2]"))
    rnd = random.Random(0)
    with pytest.raises(AssertionError):
        for _ in range(200):
            run(Phase.generate, 100, rnd.getrandbits(64))
    inner = needle.hypothesis.inner_test
    replay = settings(database=database, phases=[Phase.reuse, Phase.shrink], deadline=None)
    needle._hypothesis_internal_use_settings = replay
    with pytest.raises(unittest.SkipTest):  # under another key (none added): nothing to replay
        needle(k=2)
    inner._hypothesis_internal_add_digest = b"t.py::needle[2]"  # what the plugin adds
    with pytest.raises(AssertionError) as replayed:
        needle(k=2)
    # Saved as not yet shrunk: the replaying run shrinks it to the window's first value (a
    # failure in the primary corpus would be replayed as already shrunk, and reported as is).
    assert "x=6150" in "".join(getattr(replayed.value, "__notes__", []))


def test_a_failing_generation_slice_is_one_finding_found_by_generation(tmp_path):
    def generate(phase, examples, seed):
        raise AssertionError("planted")

    prop = Property("t::gen", lambda data: data, generate)
    record = tmp_path / "record.jsonl"
    with open(record, "w") as handle:
        worker = Worker(
            [prop], handle, seed=0, deadline=0.0, started=time.monotonic(),
            arcs=ArcCounter([KERNEL]), database=None, test_timeout=60, hang=None,
        )  # fmt: skip
        worker._generation_slice(prop, time.monotonic() + 0.2)
        worker._generation_slice(prop, time.monotonic() + 0.2)  # the same origin again
    findings = [
        line for line in map(json.loads, record.read_text().splitlines())
        if line["event"] == "finding"
    ]  # fmt: skip
    assert [(f["how"], f["input"], f["known"]) for f in findings] == [("generated", "", False)]
    assert prop.examples > 0 and prop.seconds > 0


def test_a_failure_in_the_tests_own_database_is_replayed_once_at_start_as_known(tmp_path):
    """Issue 19: a failure an earlier campaign's generation found (in the test's database,
    not under the worker's key) is replayed at the next campaign's start, reported as known,
    and not shrunk: one run of the reuse phase, nothing generated."""
    database = InMemoryExampleDatabase()
    drawn: list[int] = []

    @settings(database=database, deadline=None)
    @given(st.integers(0, 10_000))
    def needle(x):
        drawn.append(x)
        assert not 6150 <= x < 6170

    run = in_process_run_of(_Item(needle))
    assert run(Phase.reuse, 0, 0) == (0, 0)  # nothing kept yet: nothing replayed
    rnd = random.Random(1)
    with pytest.raises(AssertionError):
        for _ in range(200):
            run(Phase.generate, 100, rnd.getrandbits(64))
    record = tmp_path / "record.jsonl"
    drawn.clear()
    with open(record, "w") as handle:
        worker = Worker(
            [Property("t::needle", lambda data: data, run)], handle, seed=0, deadline=0.0,
            started=time.monotonic(), arcs=ArcCounter([KERNEL]),
            database=InMemoryExampleDatabase(), test_timeout=60, hang=None,
        )  # fmt: skip
        worker.replay_known()
    findings = [
        line for line in map(json.loads, record.read_text().splitlines())
        if line["event"] == "finding"
    ]  # fmt: skip
    assert [(f["how"], f["known"]) for f in findings] == [("database", True)]
    # The one example, replayed and then run once more for Hypothesis's report: no shrinking.
    assert len(set(drawn)) == 1 and len(drawn) <= 2 and 6150 <= drawn[0] < 6170


def test_generation_slices_take_their_share_of_a_properties_time(monkeypatch):
    """Half the slices of a property with a generation run go to it, the rest to
    fuzz_one_input; a property without one (it cannot be called in-process) only fuzzes."""
    monkeypatch.setattr(fuzz_worker, "SLICE_SECONDS", 0.002)  # many slices: a tight share
    runs = collections.Counter()

    def generate(phase, examples, seed):
        runs[phase.name] += 1
        return examples, examples

    def fuzz(data):
        runs[data[:0] + b"fuzz"] += 1
        return data

    both, fuzz_only = Property("t::both", fuzz, generate), Property("t::fuzz", fuzz)
    slices = collections.Counter()
    worker = _worker([both, fuzz_only], seed=4)
    choose = worker.choose

    def counted():  # 600 slices, whatever the machine's speed
        chosen = choose()
        slices[chosen.nodeid] += 1
        if slices.total() == 600:
            worker.deadline = 0.0
        return chosen

    monkeypatch.setattr(worker, "choose", counted)
    worker.deadline = time.monotonic() + 600
    worker.run()
    assert slices["t::both"] > 200 and fuzz_only.examples > 0
    assert 0.4 < runs["generate"] / slices["t::both"] < 0.6
    assert fuzz_only.in_process is None


def test_the_live_view_counts_discoveries_of_the_last_minute(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(fuzz_adaptive.time, "monotonic", lambda: clock[0])
    live = fuzz_adaptive._Live(started=1000.0)
    for at, discoveries in ((1, 2), (30, 5), (70, 9), (95, 9)):
        clock[0] = 1000.0 + at
        live._update("t::p", {"examples": 1, "discoveries": discoveries, "last_discovery": 1})
    # At 95 s the last minute began at 35 s: the point at 30 s (5) is the baseline.
    assert live.recent("t::p") == 4
    clock[0] = 1000.0 + 200
    assert live.recent("t::p") == 0  # nothing found since 95 s


def test_a_record_is_read_line_by_line_as_it_grows(tmp_path):
    path = tmp_path / "r.jsonl"
    tail = fuzz_adaptive._Tail(path)
    assert tail.lines() == []
    path.write_bytes(b'{"a": 1}\n{"b"')
    assert tail.lines() == [{"a": 1}]
    with open(path, "ab") as handle:
        handle.write(b": 2}\nnot json\n")
    assert tail.lines() == [{"b": 2}]


def test_the_charts_are_svg_with_one_bar_per_property_up_to_the_cap(tmp_path):
    properties = tuple(
        fuzz_adaptive.PropertyStats(f"t::p{i}", 0, 10, 10, float(i), 0, 0, None, 0)
        for i in range(25)
    )
    summary = fuzz_adaptive.AdaptiveSummary(
        seconds=3.0, workers=(), properties=properties, findings=(), losses=(),
        unfuzzable=(), timeline=((0.0, 0, 0), (1.0, 50, 200), (2.0, 80, 450)), faults=(),
        interrupted=False, collected=tuple(p.nodeid for p in properties),
        worker_start_seconds=1.0,
    )  # fmt: skip
    written = fuzz_charts.write_charts(summary, tmp_path)
    assert [p.name for p in written] == ["coverage.svg", "examples.svg", "time-per-property.svg"]
    roots = [ElementTree.parse(path).getroot() for path in written]
    assert all(root.tag == "{http://www.w3.org/2000/svg}svg" for root in roots)
    bars = roots[2].findall("{http://www.w3.org/2000/svg}rect")[1:]  # after the background
    assert len(bars) == fuzz_charts.BAR_ROWS
    (line,) = roots[0].findall("{http://www.w3.org/2000/svg}polyline")
    assert len(line.get("points").split()) == 3


@pytest.mark.parametrize(
    ("stacks", "status", "outcome"),
    [("Timeout (0:00:03)!\n  File x, in test_hangs", 1, "hung"), ("", -11, "crashed")],
)
def test_a_lost_worker_names_the_test_it_was_running(tmp_path, stacks, status, outcome):
    hang = tmp_path / "w.hang"
    hang.write_text(stacks)
    process = fuzz_adaptive._Process(
        0, 1, tmp_path / "w.jsonl", hang, tmp_path / "w.log", None, None, 0.0, running="t::p"
    )
    loss = fuzz_adaptive._loss_of(process, status, 5.0)
    assert (loss.nodeid, loss.outcome) == ("t::p", outcome)
    assert loss.stacks == stacks
