"""The cluster scenario, run inside a private network namespace by test_cluster.py (pytest does not
collect this file on its own: Ray listens on every interface, and only the namespace keeps it off the
machine's network).

Real parts throughout: PostgreSQL, `ragsweep server` (MLflow) on it, a Ray head and a Ray worker
node (1 CPU each, so jobs spread over both), and `python sweep.py -m ... hydra/launcher=ray`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from tests.cluster.services import MlflowServer, Postgres, RayNode, stop, wait_for
from tests.preloaded import run_command

GRID = ["chunker=recursive,fixed", "retriever=bm25,dense", "k=3"]  # 4 jobs
# Slow jobs for the failover (each chunk size is chunked and embedded anew), so the worker dies inside one.
SLOW_GRID = ["chunker.size=120,160,200,240", "k=3"]
SPREAD_CHUNK = 100  # tokens a chunk in the spread embedding: ~517 texts, some 10 s of minilm on 1 CPU
COMPARED = ["token_iou", "token_recall", "token_precision", "recall", "mrr", "ndcg", "precision_omega"]


def sweep_command(project: Path, *overrides: str) -> list[str]:
    return [sys.executable, str(project / "sweep.py"), "-m", *overrides, f"paths.root={project}"]


def on_cluster(head: RayNode, server: MlflowServer, cache: Path, experiment: str) -> list[str]:
    """What a user adds to run a sweep on an existing cluster, tracked by a server, sharing one cache."""
    return ["hydra/launcher=ray", f"hydra.launcher.ray.init.address={head.address}",
            "+hydra.launcher.ray.init.object_store_memory=null", f"tracking.uri={server.uri}",
            f"cache.dir={cache}", f"experiment={experiment}"]


def distinct_texts(chunk_size: int) -> int:
    """The texts a cold sweep on sotu_qa embeds, counted here: its distinct chunks and distinct questions."""
    from ragsweep.chunking.recursive import RecursiveChunker
    from ragsweep.data.sotu_qa import SotuQADataset

    dataset = SotuQADataset().load()
    chunker = RecursiveChunker(size=chunk_size)
    chunks = {chunk.text for document in dataset.documents.values() for chunk in chunker.split(document)}
    return len(chunks) + len({query.text for query in dataset.queries})


def runs(server: MlflowServer, experiment: str) -> pd.DataFrame:
    import mlflow

    mlflow.set_tracking_uri(server.uri)
    return mlflow.search_runs(experiment_names=[experiment])


def jobs(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["tags.ragsweep.role"] == "job"]


def ray_nodes(head: RayNode) -> dict[str, bool]:
    """{node id: is the head} for the cluster's live nodes, asked from a separate driver process."""
    script = ("import json, ray; ray.init(address=%r, logging_level='ERROR'); print(json.dumps({n['NodeID']: "
              "'node:__internal_head__' in n['Resources'] for n in ray.nodes() if n['Alive']}))" % head.address)
    answer = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    return json.loads(answer.stdout.strip().splitlines()[-1]) if answer.returncode == 0 else {}


def phase(name: str, began: list[float] = [time.monotonic()]) -> None:  # noqa: B006  (one clock for the file)
    """Seconds since the last phase, printed: the whole scenario must stay under 5 minutes in CI."""
    now = time.monotonic()
    print(f"[cluster scenario] {name}: {now - began[0]:.1f} s", flush=True)
    began[0] = now


def test_a_sweep_on_a_ray_cluster_tracked_on_postgresql_survives_losing_a_node(tmp_path, scratch_project):
    phase("start")
    project = scratch_project(tmp_path / "project")
    with Postgres() as postgres, \
            MlflowServer(postgres.create("mlflow"), tmp_path / "mlflow") as server, \
            RayNode(tmp_path / "ray") as head:
        with RayNode(tmp_path / "ray", address=head.address) as worker:
            nodes: dict[str, bool] = {}
            wait_for(lambda: len(nodes.update(ray_nodes(head)) or nodes) == 2, "two Ray nodes", 120, worker.log)
            worker_id = next(node for node, is_head in nodes.items() if not is_head)
            phase("services up")

            # 1. The grid on the cluster: one parent, 4 FINISHED children, jobs on both nodes.
            cluster = on_cluster(head, server, tmp_path / "shared-cache", "cluster")
            swept = run_command(sweep_command(project, *GRID, *cluster), cwd=project, capture_output=True,
                                   text=True, timeout=600)
            assert swept.returncode == 0, swept.stderr[-5000:]
            table = runs(server, "cluster")
            parents, children = table[table["tags.ragsweep.role"] == "parent"], jobs(table)
            assert len(parents) == 1 and parents.status.iloc[0] == "FINISHED"
            assert len(children) == 4 and set(children.status) == {"FINISHED"}
            assert set(children["tags.mlflow.parentRunId"]) == {parents.run_id.iloc[0]}
            assert set(children["tags.ragsweep.ray_node"]) == set(nodes)  # both nodes ran jobs
            assert children["artifact_uri"].str.startswith("mlflow-artifacts:").all()  # through the server
            phase("grid on the cluster")

            # 1b. A race on the cluster: its rounds go through the Ray launcher, one run per configuration.
            raced = run_command(
                sweep_command(project, "hydra/sweeper=racing", "retriever=bm25,dense", "k=1,5",
                              "hydra.sweeper.racing.metric=recall", "hydra.sweeper.racing.schedule=[0.5,1.0]",
                              *on_cluster(head, server, tmp_path / "shared-cache", "race")),
                cwd=project, capture_output=True, text=True, timeout=600)
            assert raced.returncode == 0, raced.stderr[-5000:]
            assert "Race on recall: winner" in raced.stdout, raced.stdout[-3000:]
            racers = jobs(runs(server, "race"))
            assert len(racers) == 4 and set(racers.status) == {"FINISHED"}
            winner = racers[racers["tags.ragsweep.race.winner"] == "true"]
            assert len(winner) == 1 and winner["tags.ragsweep.race.questions"].iloc[0] == "68"
            phase("race on the cluster")

            # 2. The same grid on this machine alone (its own cache): the same numbers.
            local = run_command(sweep_command(project, *GRID, f"tracking.uri={server.uri}", "experiment=local",
                                                 f"cache.dir={tmp_path / 'local-cache'}"),
                                   cwd=project, capture_output=True, text=True, timeout=600)
            assert local.returncode == 0, local.stderr[-5000:]
            label = "tags.ragsweep.config_label"
            ours = children.set_index(label)[[f"metrics.{m}" for m in COMPARED]].sort_index()
            theirs = jobs(runs(server, "local")).set_index(label)[[f"metrics.{m}" for m in COMPARED]].sort_index()
            pd.testing.assert_frame_equal(ours, theirs, check_exact=False, rtol=0, atol=1e-9)
            phase("grid on one machine")

            # 2b. One embedding spread over both nodes: a sweep of one job on a 2-CPU cluster gets an embedding
            # helper for the idle node, and the two share out its shards (cache.embedding_shard); each text is
            # embedded once in all.
            spread = run_command(
                sweep_command(project, "retriever=dense", f"chunker.size={SPREAD_CHUNK}", "k=3",
                              "cache.embedding_shard=16", f"hydra.sweep.dir={tmp_path / 'spread-sweep'}",
                              *on_cluster(head, server, tmp_path / "spread-cache", "spread")),
                cwd=project, capture_output=True, text=True, timeout=600)
            assert spread.returncode == 0, spread.stderr[-5000:]
            spreader = jobs(runs(server, "spread"))
            assert len(spreader) == 1 and spreader.status.iloc[0] == "FINISHED"
            records = (tmp_path / "spread-sweep").glob("*/embedding_helper.json")
            helped = [json.loads(path.read_text()) for path in records]
            assert len(helped) == 1 and helped[0]["embedded"] > 0, helped
            nodes_used = {spreader["tags.ragsweep.ray_node"].iloc[0], helped[0]["ragsweep.ray_node"]}
            assert nodes_used == set(nodes)
            embedded = spreader["metrics.cache_misses_embeddings"].iloc[0]
            assert embedded > 0 and embedded + helped[0]["embedded"] == distinct_texts(SPREAD_CHUNK)
            phase("one embedding on both nodes")

            # 3. The worker node dies inside a job.
            failover = on_cluster(head, server, tmp_path / "failover-cache", "failover")
            command = sweep_command(project, *SLOW_GRID, *failover)
            with open(tmp_path / "failover.log", "w") as log:
                sweep = subprocess.Popen(command, cwd=project, stdout=log, stderr=subprocess.STDOUT)

            def worker_busy() -> bool:
                try:
                    running = jobs(runs(server, "failover")).query("status == 'RUNNING'")
                except Exception:  # noqa: BLE001  (no experiment yet)
                    return False
                return (running.get("tags.ragsweep.ray_node", pd.Series(dtype=str)) == worker_id).any()

            wait_for(worker_busy, "a job running on the worker node", 300, tmp_path / "failover.log")
            stop(worker.process)
            worker.process = None
            sweep.wait(timeout=600)
            phase("failover sweep")
        assert not jobs(runs(server, "failover")).query("status == 'RUNNING'").shape[0]

        # 4. Run the sweep again (on the head alone): it completes the rest, none twice.
        again = run_command(command, cwd=project, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-5000:]
        table = jobs(runs(server, "failover"))
        assert not (table.status == "RUNNING").any()
        finished = table[table.status == "FINISHED"]
        fingerprints = finished["tags.ragsweep.config_fingerprint"]
        assert fingerprints.nunique() == 4 and not fingerprints.duplicated().any()
        lost = table[table.status == "KILLED"]
        assert (lost["tags.ragsweep.ray_node"] == worker_id).any(), table[["status", "tags.ragsweep.ray_node"]]
        assert lost["tags.ragsweep.lost"].notna().all()
        phase("rerun")
