"""The benchmark scoreboard: benchmarks/README.md is what benchmarks/scoreboard.py renders from
the records in benchmarks/records/, every record carries the fields the page shows, every
benchmark script has one, and ``write_record`` writes what the checker and the page accept."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _common  # noqa: E402
import scoreboard  # noqa: E402


def _record() -> dict:
    return {
        "benchmark": "bench_numpy_ops",
        "script": "benchmarks/bench_numpy_ops.py",
        "command": "python benchmarks/bench_numpy_ops.py --repeat 30",
        "date": "2026-12-07T18:00Z",
        "source": "measured",
        "machine": {"cpu": "2-core AMD EPYC", "gpu": "none", "load": "1.00 → 1.20"},
        "rows": [_common.row("cpu", "add, n=32", 2.0, 0.5, "µs", "numpy")],
    }


def test_readme_is_what_scoreboard_renders_from_the_records():
    want = scoreboard.render(scoreboard.load_records())
    got = (BENCH / "README.md").read_text(encoding="utf-8")
    assert got == want, "benchmarks/README.md is stale: run `python benchmarks/scoreboard.py`"


def test_every_record_has_the_required_fields_and_names_a_real_script():
    paths = sorted((BENCH / "records").glob("*.json"))
    assert paths
    for path in paths:
        rec = json.loads(path.read_text(encoding="utf-8"))
        assert _common.check_record(rec) == [], path.name
        script = Path(rec["script"])
        assert (BENCH.parent / script).is_file(), f"{path.name}: no {script}"
        assert path.stem == script.stem or path.stem.startswith(script.stem + "-"), path.name
        assert path.stem == rec["benchmark"], path.name


def test_every_benchmark_script_has_a_record():
    scripts = {p.name for p in BENCH.glob("bench_*.py")}
    recorded = {Path(rec["script"]).name for rec in scoreboard.load_records()}
    assert scripts - recorded == set(), (
        "benchmarks without a record on the scoreboard: run each (its write_record call writes "
        "benchmarks/records/<name>.json), then `python benchmarks/scoreboard.py`, and commit both")


@pytest.mark.parametrize(
    "break_it, problem",
    [
        (lambda r: r["machine"].pop("load"), "machine.load"),
        (lambda r: r.pop("command"), "command must be"),
        (lambda r: r.update(command="python benchmarks/bench_onnx.py"), "does not run"),
        (lambda r: r.update(date="07/12/2026"), "not ISO"),
        (lambda r: r.update(source="journal"), "journal_section"),
        (lambda r: r.update(rows=[]), "rows must be"),
        (lambda r: r["rows"][0].update(target="tpu"), "target 'tpu'"),
        (lambda r: r["rows"][0].update(ratio=0.25), "disagrees with the figures"),
        (lambda r: r["rows"][0].update(peer=None, ratio=None), "ratio is None"),
        (lambda r: r["rows"][0].update(ember=[3.0, 1.0]), "ember must be"),
        (lambda r: r["rows"][0].update(peer=float("inf")), "peer must be"),
    ],
)
def test_check_record_names_each_problem(break_it, problem):
    rec = _record()
    assert _common.check_record(rec) == []
    broken = copy.deepcopy(rec)
    break_it(broken)
    problems = _common.check_record(broken)
    assert any(problem in p for p in problems), problems


def test_row_computes_the_ratio_so_that_below_one_ember_is_ahead():
    assert _common.row("cpu", "t", 2.0, 0.5, "ms", "numpy")["ratio"] == 4.0
    rate = _common.row("gpu", "r", 30.0, 60.0, "TFLOP/s", "torch", higher_is_better=True)
    assert rate["ratio"] == 2.0
    with pytest.raises(ValueError, match="target 'tpu' is not one of"):
        _common.row("tpu", "t", 1.0, 1.0, "ms", "numpy")
    with pytest.raises(ValueError, match="ratio is None"):
        _common.row("cpu", "t", 1.0, None, "s", "none")


def test_write_record_replaces_the_record_and_the_page_shows_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_BENCH_RECORDS", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_numpy_ops.py", "--repeat", "3"])
    for name in _common.SPEED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # changes what is measured: part of the command
    _common.write_record([_common.row("cpu", "add, n=32", 9.0, 1.0, "µs", "numpy")])
    _common.write_record([_common.row("cpu", "add, n=32", 2.0, 0.5, "µs", "numpy")])
    assert [p.name for p in tmp_path.iterdir()] == ["bench_numpy_ops.json"]
    rec = json.loads((tmp_path / "bench_numpy_ops.json").read_text(encoding="utf-8"))
    assert rec["command"] == "OMP_NUM_THREADS=1 python benchmarks/bench_numpy_ops.py --repeat 3"
    assert rec["source"] == "measured" and rec["rows"][0]["ratio"] == 4.0
    assert rec["machine"]["cpu"] and rec["machine"]["load"] and rec["machine"]["gpu"]
    page = scoreboard.render(scoreboard.load_records(str(tmp_path)))
    assert "## CPU: the numpy backend" in page
    assert "| add, n=32 | 2 µs | numpy: 0.5 µs | 4.00× | 20" in page
    assert "`OMP_NUM_THREADS=1 python benchmarks/bench_numpy_ops.py --repeat 3`" in page


def test_a_broken_record_stops_the_rendering_with_its_file_name(tmp_path):
    rec = _record()
    del rec["rows"][0]["unit"]
    (tmp_path / "bench_numpy_ops.json").write_text(json.dumps(rec), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bench_numpy_ops\.json: .*unit must be"):
        scoreboard.load_records(str(tmp_path))
