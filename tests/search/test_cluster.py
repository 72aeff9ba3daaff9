"""The search on a Ray cluster (tcomp/search/cluster.py) on local clusters of two or three
nodes (``ray.cluster_utils.Cluster``), in the simulator: the same seed finds the same
winner as the search here (the measured procedure, with the tests' stand-in clock that
``TCOMP_MEASURE_STANDIN`` gives a candidate validated in the simulator); a node killed
while it measures loses no record and measures nothing twice; a driver killed mid-search
and resumed measures nothing twice. Also the errors that need no cluster."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import tcomp as tc
import tcomp.search.search as search
from tcomp.cli import main as cli
from tcomp.search.cluster import ClusterError, connect

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import matmul_silu_quant  # noqa: E402

# NOTE: one cluster at a time: pytest-xdist runs this file's tests in one worker; a hang fails, not stalls
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(300)]


def _algorithm():
    return matmul_silu_quant.algorithm(32, 32, 32)


@pytest.fixture
def few_draws(monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    monkeypatch.setattr(search, "DRAWS_PER_TRIAL", 2)
    monkeypatch.setattr(search, "MUTANTS_PER_TRIAL", 2)


def _cluster(nodes: int, gpus: int = 0):
    """A local cluster of ``nodes`` nodes of one CPU each (the last one with ``gpus``
    logical GPUs), joined by this process."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for n in range(nodes - 1):
        cluster.add_node(num_cpus=1, num_gpus=gpus if n == nodes - 2 else 0)
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    return ray, cluster


def _cluster_fixture(nodes: int, gpus: int = 0):
    @pytest.fixture
    def fixture():
        ray, cluster = _cluster(nodes, gpus)
        yield cluster
        ray.shutdown()
        cluster.shutdown()

    return fixture


two_nodes = _cluster_fixture(2)
two_nodes_one_gpu = _cluster_fixture(2, gpus=1)
three_nodes = _cluster_fixture(3)


def _lines(db: Path) -> list:
    return [json.loads(line) for line in db.read_text().splitlines()] if db.exists() else []


class _Notes(search.Progress):
    def __init__(self):
        self.stages = []

    def stage(self, text):
        self.stages.append(text)


def test_the_same_seed_finds_the_same_winner_here_and_on_the_cluster(two_nodes_one_gpu, tmp_path, monkeypatch,
                                                                    few_draws):
    """The measured search: here, and on a cluster whose second node has a (logical) GPU,
    so that its actor measures there and each candidate is built by a task on that node
    first; both in the simulator with the stand-in clock."""
    monkeypatch.setenv("TCOMP_MEASURE_STANDIN", "1")  # NOTE: passed on to the cluster's workers by the driver
    here = tc.autoschedule(_algorithm(), trials=4, db=tmp_path / "here.jsonl", workers=1, seed=2)
    notes = _Notes()
    there = tc.autoschedule(_algorithm(), trials=4, db=tmp_path / "there.jsonl", seed=2,
                            cluster=two_nodes_one_gpu.address, progress=notes)
    assert any(s.startswith("joined 2 node(s), 2 CPUs, 1 GPUs") for s in notes.stages)
    gpu_node = two_nodes_one_gpu.list_all_nodes()[-1].node_id[:8]
    assert any(s.startswith("measuring on 1 measuring actor(s) on CUDA simulator at") and gpu_node in s
               for s in notes.stages)
    assert there.source == here.source and there.measured == here.measured and there.measured is not None
    assert sorted(r.schedule for r in there.records) == sorted(r.schedule for r in here.records)
    lines = _lines(tmp_path / "there.jsonl")
    assert len(lines) == 4 and len({r["schedule"] for r in lines}) == 4  # only the driver wrote, once each
    assert {r["target"]["gpu"] for r in lines} == {"CUDA simulator"} and len({r["job"] for r in lines}) == 1


def test_a_job_shares_one_set_of_actors_and_shares_its_trials_as_it_does_here(two_nodes_one_gpu, tmp_path,
                                                                               monkeypatch, few_draws):
    """Two workloads as one job, here and on the cluster, same seed: the same winners, the
    same trials each and the same batches in the same order; on the cluster one set of
    measuring actors serves both searches, each with its own bench."""
    from tcomp.search import cluster as cluster_module
    from tcomp.search.job import JobWorkload, tune

    monkeypatch.setenv("TCOMP_MEASURE_STANDIN", "1")
    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 1)
    started = []
    real_init = cluster_module.ClusterActors.__init__

    def counting_init(self, *args, **kwargs):
        started.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(cluster_module.ClusterActors, "__init__", counting_init)

    def workloads():
        return [JobWorkload("wide", matmul_silu_quant.algorithm(32, 64, 32), 10),
                JobWorkload("square", _algorithm(), 1)]

    here = tune(workloads(), 5, db=tmp_path / "here.jsonl", workers=1, seed=3)
    there = tune(workloads(), 5, db=tmp_path / "there.jsonl", seed=3, cluster=two_nodes_one_gpu.address)
    assert len(started) == 1 and sorted(started[0].benches) == ["bench0", "bench1"]
    assert started[0].workers == {}  # NOTE: stopped when the job ended
    assert there.trials == here.trials and sum(there.trials.values()) == 5
    assert [(name, n) for name, n, _ in there.order] == [(name, n) for name, n, _ in here.order]
    for name in ("wide", "square"):
        assert there.results[name].source == here.results[name].source
        assert there.results[name].measured == here.results[name].measured is not None
    lines = _lines(tmp_path / "there.jsonl")
    assert len(lines) == 5 and len({(r["workload"], r["schedule"]) for r in lines}) == 5


def test_without_a_gpu_the_cluster_validates_the_best_predicted_in_the_simulator(two_nodes, tmp_path, few_draws):
    here = tc.autoschedule(_algorithm(), trials=3, db=tmp_path / "here.jsonl", workers=1)
    there = tc.autoschedule(_algorithm(), trials=3, db=tmp_path / "there.jsonl", cluster="auto")
    assert there.source == here.source and there.measured is None
    assert there.validated == "matches tc.evaluate in the CUDA simulator on the cluster"
    lines = _lines(tmp_path / "there.jsonl")
    assert [r["status"] for r in lines] == ["ok"] * 3 and len({r["schedule"] for r in lines}) == 3


def test_a_node_killed_while_it_measures_loses_no_record(three_nodes, tmp_path, few_draws):
    """Three nodes of one CPU: two measuring actors. Once the first candidate is recorded,
    the node of an actor (not the head) is removed; its candidates are validated on the
    other, and the database holds each candidate once."""
    import threading

    db = tmp_path / "db.jsonl"
    notes = _Notes()
    found = {}
    search_thread = threading.Thread(target=lambda: found.update(result=tc.autoschedule(
        _algorithm(), trials=6, db=db, cluster=three_nodes.address, progress=notes)))
    search_thread.start()
    deadline = time.monotonic() + 240
    while not _lines(db) and time.monotonic() < deadline and search_thread.is_alive():
        time.sleep(0.05)
    assert _lines(db), "no candidate was recorded"
    where = next(s for s in notes.stages if "measuring actor(s)" in s)  # NOTE: names each actor's node
    head = three_nodes.head_node.node_id
    victims = [n for n in three_nodes.list_all_nodes() if f"({n.node_id[:8]})" in where and n.node_id != head]
    assert victims, f"no measuring actor runs outside the head node: {where}"
    victim = victims[0]
    three_nodes.remove_node(victim)
    search_thread.join(timeout=300)
    assert not search_thread.is_alive() and "result" in found
    lines = _lines(db)
    assert len(lines) == 6 and len({r["schedule"] for r in lines}) == 6
    # NOTE: each actor took three candidates, seconds each in the simulator: the victim had some left
    died = [s for s in notes.stages if "died" in s]
    assert died and f"({victim.node_id[:8]}) died; its candidates go to the other actors" in died[0]
    assert all(r["status"] == "ok" for r in lines)  # measured again on the other node


def test_a_killed_driver_resumed_measures_nothing_twice(two_nodes, tmp_path):
    """A driver process searching on the cluster is killed once it has recorded a
    candidate; ``resume=True`` continues its job: every candidate recorded once."""
    db = tmp_path / "db.jsonl"
    driver = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(EXAMPLES)!r})
        import matmul_silu_quant
        import tcomp as tc
        import tcomp.search.search as search
        search.MIN_DRAWS = 12
        tc.autoschedule(matmul_silu_quant.algorithm(32, 32, 32), trials=5, db={str(db)!r},
                        cluster={two_nodes.address!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", driver], env=dict(os.environ), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while not _lines(db) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    before = _lines(db)
    assert 1 <= len(before) < 5, "the driver should have been killed mid-search"
    search.MIN_DRAWS = 12
    try:
        resumed = tc.autoschedule(_algorithm(), trials=5, db=db, cluster=two_nodes.address, resume=True)
    finally:
        search.MIN_DRAWS = 96
    lines = _lines(db)
    assert len(lines) == 5 and len({r["schedule"] for r in lines}) == 5  # nothing validated twice
    assert lines[:len(before)] == before and len({r["job"] for r in lines}) == 1
    assert len(resumed.records) == 5 and resumed.validated.endswith("on the cluster")


def test_an_actor_that_never_starts_is_left_out_and_none_starting_is_an_error(tmp_path, monkeypatch, few_draws):
    """A node of two logical GPUs, one of them held by another job's actor: one measuring
    actor starts, the other waits for a GPU and is left out after ``START_SECONDS``; the
    search measures on the one. With both GPUs held, no actor starts: a ClusterError."""
    from tcomp.search import cluster as cluster_module

    ray, cluster = _cluster(2, gpus=2)
    try:
        monkeypatch.setenv("TCOMP_MEASURE_STANDIN", "1")
        monkeypatch.setattr(cluster_module, "START_SECONDS", 15.0)  # NOTE: 5 s left the one out on a loaded 2-core machine
        holder = ray.remote(num_gpus=1, num_cpus=0)(type("Holder", (), {"ping": lambda self: 0}))
        first = holder.remote()
        ray.get(first.ping.remote())
        notes = _Notes()
        found = tc.autoschedule(_algorithm(), trials=2, db=tmp_path / "db.jsonl", cluster=cluster.address,
                                progress=notes)
        assert found.measured is not None and len(_lines(tmp_path / "db.jsonl")) == 2
        assert any(s.startswith("measuring on 1 measuring actor(s)") for s in notes.stages), notes.stages
        second = holder.remote()
        ray.get(second.ping.remote())
        with pytest.raises(ClusterError, match=r"none of the cluster's 2 measuring actors started within 15 s"):
            tc.autoschedule(_algorithm(), trials=2, db=tmp_path / "db2.jsonl", cluster=cluster.address)
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_actors_that_all_died_and_gpus_the_cluster_lacks_are_named(two_nodes):
    """Measuring actors whose processes all died before a search adds its bench, and GPU
    actors asked of a cluster without a GPU: ClusterErrors that say so."""
    from tcomp.search.cluster import ClusterActors

    cluster = connect("auto")
    with pytest.raises(ClusterError, match=rf"the cluster at {cluster.address} has no GPU to measure on"):
        ClusterActors(cluster, on_gpus=True)
    actors = cluster.actors(on_gpus=False)
    for worker in actors.workers:
        cluster.ray.kill(worker)
    with pytest.raises(ClusterError, match=rf"every measuring actor of the cluster at {cluster.address} died"):
        actors.measurer(_algorithm())
    assert actors.workers == {}


def test_a_node_with_another_tcomp_version_is_named(tmp_path, few_draws):
    """Workers whose Python path finds another tcomp's metadata first (as a node with
    another tcomp installed would: their working folder holds it) stop the search before
    anything is measured, naming the node and both versions."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from tcomp.search.database import tcomp_version

    elsewhere = tmp_path / "elsewhere"
    info = elsewhere / "tcomp-0.0.0+elsewhere.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tcomp\nVersion: 0.0.0+elsewhere\n")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR",
             runtime_env={"working_dir": str(elsewhere)})
    try:
        with pytest.raises(ClusterError, match=rf"node .* has tcomp 0\.0\.0\+elsewhere, the driver "
                                               rf"{tcomp_version()}: install the same version on every node"):
            tc.autoschedule(_algorithm(), trials=2, db=tmp_path / "db.jsonl", cluster="auto")
        assert not (tmp_path / "db.jsonl").exists() or not _lines(tmp_path / "db.jsonl")
    finally:
        ray.shutdown()
        cluster.shutdown()


# ---------------------------------------------------------------------- errors, no cluster needed


def test_resuming_a_workload_the_database_never_searched_says_so(tmp_path):
    with pytest.raises(tc.TcompError, match="nothing to resume: the tuning database .* holds no search of this "
                                            "workload"):
        tc.autoschedule(_algorithm(), trials=2, db=tmp_path / "db.jsonl", resume=True)


def test_an_executor_and_a_cluster_together_are_refused(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool, pytest.raises(tc.TcompError, match="an executor or a cluster, not both"):
        tc.autoschedule(_algorithm(), db=tmp_path / "db.jsonl", executor=pool, cluster="auto")


def test_the_cli_refuses_gpus_with_a_cluster_and_resume_with_shapes(capsys):
    file = str(EXAMPLES / "matmul_silu_quant.py")
    assert cli(["autoschedule", file, "--cluster", "auto", "--gpus", "2"]) != 0
    assert "--gpus counts this machine's GPUs" in capsys.readouterr().err
    assert cli(["autoschedule", file, "--resume", "--shapes", "M=1:10,M=32:1"]) != 0
    assert "--resume continues one search" in capsys.readouterr().err


def test_a_blank_address_is_refused():
    with pytest.raises(ClusterError, match="a cluster address is 'auto', 'HOST:PORT' or 'ray://HOST:PORT', got '  '"):
        connect("  ")


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ClusterError, match=r'needs Ray, which is not installed: pip install "tcomp\[cluster\]"'):
        connect("auto")


def test_joining_a_second_cluster_is_refused(two_nodes):
    with pytest.raises(ClusterError, match="has joined the Ray cluster at .* already; it cannot search on "
                                           "'127.0.0.1:1' too"):
        connect("127.0.0.1:1")
    assert connect("auto").address == connect(two_nodes.address).address
