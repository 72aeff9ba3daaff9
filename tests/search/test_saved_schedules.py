"""Every schedule in schedules/ replays on the workload and shape its header names, and
tc.check accepts it there."""

import re
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.workload import apply_schedule, load_schedule, load_workload

ROOT = Path(__file__).resolve().parents[2]
SAVED = sorted((ROOT / "schedules").glob("*.py"))


def test_there_are_saved_schedules():
    assert SAVED


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.name)
def test_a_saved_schedule_replays_and_is_legal(path):
    text = path.read_text()
    workload_file = re.search(r"^workload: (\S+)$", text, re.M).group(1)
    shape = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", re.search(r"^shape: +(.+)$", text, re.M).group(1)))
    workload = load_workload(str(ROOT / workload_file))
    out, _ = workload.build_algorithm(shape)
    s = tc.create_schedule(out)
    fn, where = load_schedule(str(path))
    apply_schedule(s, out, fn, where=where)
    assert tc.check(s).legal
