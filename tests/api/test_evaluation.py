"""`ragsweep.Evaluation` against sweep.py, and components ragsweep does not ship scored through it.

Real parts throughout: a scratch project with its own MLflow store (SQLite) and stage cache, the
embedded sotu_qa dataset, all-MiniLM-L6-v2, LangChain's own splitter and BM25 retriever.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragsweep import Component, ConfigError, DatasetError, Evaluation
from ragsweep.types import Dataset, Document, Query, Span
from tests.preloaded import run_command


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    return scratch_project(tmp_path_factory.mktemp("api"))


def _sweep_py(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # tests/own_components.py, a user's own module
    return run_command([sys.executable, "sweep.py", *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=900)


def _runs(project: Path, experiment: str):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=[experiment])
    return runs[runs["tags.ragsweep.role"] == "job"]


def test_a_run_from_python_is_the_run_sweep_py_makes(project):
    cli = _sweep_py(project, "chunker=fixed", "k=3", "experiment=parity")
    assert cli.returncode == 0, cli.stderr[-3000:]
    result = Evaluation(experiment="parity", project=project).run(chunker="fixed", k=3)
    runs = _runs(project, "parity").set_index("run_id")
    assert len(runs) == 2 and set(runs.status) == {"FINISHED"}
    assert runs["tags.ragsweep.config_fingerprint"].nunique() == 1
    assert runs.loc[result.run_id, "tags.ragsweep.config_fingerprint"] == result.fingerprint
    assert set(runs["tags.ragsweep.config_label"]) == {"chunker=fixed,k=3"} and result.label == "chunker=fixed,k=3"
    cli_run = runs.drop(result.run_id).iloc[0]
    for name in ("token_iou", "recall", "ndcg", "token_recall_std", "n_chunks"):
        assert runs.loc[result.run_id, f"metrics.{name}"] == cli_run[f"metrics.{name}"], name
    assert result.metrics["token_iou"].mean == pytest.approx(cli_run["metrics.token_iou"], abs=0)
    assert len(result.per_query) == 68 and result.per_query["token_iou"].mean() == pytest.approx(
        result.metrics["token_iou"].mean)
    assert runs.loc[result.run_id, "params.chunker"] == "fixed"


def test_a_sweep_from_python_has_a_parent_run_and_sweep_py_skips_what_it_finished(project):
    ev = Evaluation(experiment="grid", project=project)
    table = ev.sweep({"chunker": ["recursive", "fixed"], "k": [3, 5]})
    assert len(table) == 4 and set(table.status) == {"FINISHED"}
    assert table["token_iou"].is_monotonic_decreasing
    import mlflow

    runs = mlflow.search_runs(experiment_names=["grid"])
    parent = runs[runs["tags.ragsweep.role"] == "parent"]
    assert len(parent) == 1 and parent.status.iloc[0] == "FINISHED"
    assert set(_runs(project, "grid")["tags.mlflow.parentRunId"]) == {parent.run_id.iloc[0]}
    again = _sweep_py(project, "-m", "chunker=recursive,fixed", "k=3,5", "experiment=grid")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (again.stdout + again.stderr).count("skipped ") == 4
    assert len(_runs(project, "grid")) == 4  # nothing ran twice: the CLI found every API run by its fingerprint
    compared = ev.compare(table.run_id[0], table.run_id[3])
    assert compared["queries"] == 68 and compared["difference"] > 0
    assert compared["ci_low"] <= compared["difference"] <= compared["ci_high"]
    assert compared["verdict"] in ("better", "not distinguishable")

    found = ev.diff(table.run_id[0], table.run_id[3])  # per question, largest |B - A| first: B - A averages to -(A - B)
    assert found.metric == "token_iou" and len(found.table) == 68
    assert found.table["difference"].mean() == pytest.approx(-compared["difference"])
    assert found.table["difference"].abs().is_monotonic_decreasing
    shown = run_command([sys.executable, "-m", "ragsweep.cli", "diff", table.run_id[0], table.run_id[3],
                            "--experiment", "grid", "--top", "2"], cwd=project, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))})
    assert shown.returncode == 0, shown.stderr[-2000:]
    first = found.table.iloc[0]
    assert f"{first['id']}  token_iou: A {first['a']:.4f}  B {first['b']:.4f}" in shown.stdout
    assert f"A spans: {first['a_spans']}" in shown.stdout and "... 66 more questions" in shown.stdout
    page = project / "reports" / f"diff-{table.run_id[0][:8]}-{table.run_id[3][:8]}.html"
    assert page.read_text().count("<tr>") == 1 + 68


def test_errors_are_the_command_lines_as_exceptions(project, tmp_path):
    ev = Evaluation(experiment="errors", project=project)
    with pytest.raises(ConfigError) as raised:
        ev.run(k=0)
    cli = _sweep_py(project, "k=0", "experiment=errors")
    assert cli.returncode == 2 and f"ragsweep: error: {raised.value}" in cli.stderr
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetError) as raised:
        Evaluation(dataset="native", project=project, overrides=[f"dataset.path={missing}"]).run()
    assert str(missing) in str(raised.value)
    with pytest.raises(ConfigError, match="chunker=nope is not an option"):
        ev.run(chunker="nope")
    with pytest.raises(ConfigError, match="2 of 2 points of the sweep cannot run; nothing was started"):
        ev.sweep({"k": [0, -1]})
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    assert "errors" not in {experiment.name for experiment in mlflow.search_experiments()}  # nothing was started


class Altered:
    """A splitter whose pieces are windows of the document with every ' the ' upper-cased and whitespace
    collapsed: not verbatim, but alike enough to locate."""

    name, version = "altered", "1"

    def __init__(self, size: int = 400) -> None:
        self.size = size

    def windows(self, text: str) -> list[tuple[int, int]]:
        return [(i, min(i + self.size, len(text))) for i in range(0, len(text), self.size) if text[i:i + self.size].strip()]

    def split_text(self, text: str) -> list[str]:
        return [" ".join(text[start:end].replace(" the ", " THE ").split()) for start, end in self.windows(text)]


class Rewriting:
    """A 'chunker' that returns text that is not in the document (each piece's words reversed)."""

    def split_text(self, text: str) -> list[str]:
        return [" ".join(reversed(text[i:i + 300].split())) for i in range(0, len(text), 300)]


def test_a_langchain_splitter_is_scored_on_spans_located_exactly(project):
    """LangChain's splitter with keep_separator='start' and token lengths gives ragsweep's recursive chunks
    (tests/chunking), so once its strings are located, every metric must equal chunker=recursive's."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from ragsweep.chunking.own import OwnChunker
    from ragsweep.data.sotu_qa import SotuQADataset
    from ragsweep.tokenizer import Tokenizer

    splitter = RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0, keep_separator="start",
                                              length_function=Tokenizer().count,
                                              separators=["\n\n", "\n", ".", "?", "!", " ", ""])
    ev = Evaluation(experiment="own", project=project)
    result = ev.run(chunker=Component(splitter, name="lc-recursive-200", version="1"), k=5)
    ours = ev.run(chunker="recursive", k=5)
    runs = _runs(project, "own").set_index("run_id")
    mine = runs.loc[result.run_id]
    assert mine["metrics.located_fuzzy"] == 0 and mine["metrics.located_exact"] == mine["metrics.n_chunks"]
    assert mine["params.chunker"] == "lc-recursive-200" and mine["params.chunker.version"] == "1"
    assert result.label == "chunker=lc-recursive-200,k=5"
    assert result.fingerprint != ours.fingerprint
    for name in ("token_iou", "token_recall", "recall", "ndcg", "map", "precision_omega", "chunk_f1"):
        assert result.metrics[name] == ours.metrics[name], name
    dataset = SotuQADataset().load()
    document = dataset.documents[sorted(dataset.documents)[0]]
    chunks = OwnChunker(splitter, "lc", "1").split(document)
    assert [chunk.text for chunk in chunks] == splitter.split_text(document.text)  # each piece is its own span


def test_altered_text_is_located_fuzzily_and_rewritten_text_fails_clearly(project):
    from ragsweep.chunking.own import OwnChunker
    from ragsweep.data.sotu_qa import SotuQADataset

    document = SotuQADataset().load().documents["1862-Lincoln-1"]
    splitter = Altered(120)
    chunker = OwnChunker(splitter, "altered", "1")
    chunks = chunker.split(document)
    assert chunker.located["fuzzy"] > len(chunks) / 2 and sum(chunker.located.values()) == len(chunks)
    for chunk, (start, end) in zip(chunks, splitter.windows(document.text), strict=True):
        assert chunk.text == document.text[chunk.start:chunk.end]  # the document's text, not the altered string
        overlap = min(end, chunk.end) - max(start, chunk.start)
        assert overlap / (max(end, chunk.end) - min(start, chunk.start)) > 0.9  # where the window really was
    ev = Evaluation(experiment="own", project=project)
    result = ev.run(chunker=Altered())
    run = _runs(project, "own").set_index("run_id").loc[result.run_id]
    assert run["metrics.located_fuzzy"] > 0 and result.metrics["token_iou"].mean > 0
    with pytest.raises(ConfigError, match="texts it returned are not in the documents"):
        ev.run(chunker=Component(Rewriting(), "rewriting", "1"))


def test_own_components_need_a_name_and_a_version(project):
    ev = Evaluation(experiment="own", project=project)
    with pytest.raises(ConfigError, match="needs a name and a version: ragsweep cannot read an object's settings"):
        ev.run(chunker=Rewriting())
    with pytest.raises(ConfigError, match="needs a name and a version"):
        ev.run(chunker=Component(Rewriting(), name="has space", version="1"))


def test_a_langchain_bm25_retriever_is_scored_on_the_spans_it_returned(project):
    from langchain_community.retrievers import BM25Retriever
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from ragsweep.data.sotu_qa import SotuQADataset

    dataset = SotuQADataset().load()
    splitter = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0)
    texts = [piece for doc_id in sorted(dataset.documents) for piece in splitter.split_text(dataset.documents[doc_id].text)]
    retriever = BM25Retriever.from_texts(texts, k=5)
    ev = Evaluation(experiment="whole", project=project)
    result = ev.run(retriever=Component(retriever, name="lc-bm25-400", version="1"), k=5)
    run = _runs(project, "whole").set_index("run_id").loc[result.run_id]
    assert run["metrics.located_fuzzy"] == 0 and run["metrics.located_exact"] == 68 * 5
    assert {"token_iou", "token_recall", "mrr", "hit_rate", "chunk_recall"} <= set(result.metrics)
    assert not {"recall", "ndcg", "map", "precision_omega"} & set(result.metrics)  # need the retriever's whole chunking
    assert pd.isna(run.get("params.chunker")) and pd.isna(run.get("params.store"))  # it has neither
    assert run["params.retriever"] == "lc-bm25-400"
    first = result.per_query.iloc[0]
    expected = retriever.invoke(first["question"])
    import json

    record = json.loads((result.output_dir / "per_query.jsonl").read_text().splitlines()[0])
    texts_of = {doc_id: dataset.documents[doc_id].text for doc_id in dataset.documents}
    assert [texts_of[r["doc_id"]][r["start"]:r["end"]] for r in record["retrieved"]] == [d.page_content for d in expected]
    again = ev.run(retriever=Component(retriever, name="lc-bm25-400", version="1"), k=5)
    rerun = _runs(project, "whole").set_index("run_id").loc[again.run_id]
    assert rerun["metrics.cache_hits_retrieval"] == 1 and rerun["metrics.token_iou"] == run["metrics.token_iou"]


class FirstPassage:
    """A generator of one's own: answers with the first retrieved passage's first sentence."""

    name, version = "first-passage", "1"

    def generate(self, question: str, passages: list[str]) -> str:
        if "Clinton" in question:
            raise RuntimeError("this generator does not answer about Clinton")
        return passages[0].split(".")[0]


class HashEmbeddings:
    """LangChain's Embeddings interface over a bag of hashed words (no model)."""

    name, version = "hashed-words", "1"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = np.zeros((len(texts), 256))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rows[row, hash(word) % 256] += 1
        return rows.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_an_own_generator_and_embedder_are_scored_and_their_failures_counted(project):
    ev = Evaluation(experiment="own-generator", project=project)
    result = ev.run(generator=FirstPassage(), embedder=HashEmbeddings(), judge="none",
                    overrides=["generator.max_error_rate=0.5"])
    assert {"answer_f1", "generation_error_rate"} <= set(result.metrics)
    failed = sum("Clinton" in question for question in result.per_query.question)
    assert failed and result.metrics["generation_error_rate"].mean == pytest.approx(failed / 68)
    assert result.per_query.loc[result.per_query.question.str.contains("Clinton"), "answer"].isna().all()


def test_a_dataset_built_in_python_is_scored_and_checked(project):
    text = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."
    dataset = Dataset("tiny", {"d": Document("d", text)},
                      [Query("q1", "Which comes after delta?", (Span("d", 18, 37),))])
    result = Evaluation(dataset=dataset, experiment="tiny", project=project).run(
        chunker="fixed", overrides=["chunker.size=5", "chunker.overlap=0"], k=1)
    assert result.label == "chunker.overlap=0,chunker.size=5,chunker=fixed,dataset=tiny,k=1"
    broken = Dataset("broken", {"d": Document("d", text)}, [Query("q1", "?", (Span("d", 40, 99),))])
    with pytest.raises(DatasetError, match="question 'q1' has reference d\\[40:99\\]"):
        Evaluation(dataset=broken, project=project).run()


def test_a_user_yaml_names_a_component_for_the_command_line_and_python(project, tmp_path):
    own = tmp_path / "my_conf" / "chunker"
    own.mkdir(parents=True)
    (own / "lc_recursive.yaml").write_text(
        "_target_: ragsweep.chunking.own.OwnChunker\n"
        "component:\n  _target_: langchain_text_splitters.RecursiveCharacterTextSplitter\n"
        "  chunk_size: 300\n  chunk_overlap: 0\n")
    cli = _sweep_py(project, "--config-dir", str(tmp_path / "my_conf"), "chunker=lc_recursive", "k=3",
                    "experiment=yaml")
    assert cli.returncode == 0, cli.stderr[-3000:]
    result = Evaluation(experiment="yaml", project=project, config_dir=tmp_path / "my_conf").run(
        chunker="lc_recursive", k=3)
    runs = _runs(project, "yaml")
    assert len(runs) == 2 and runs["tags.ragsweep.config_fingerprint"].nunique() == 1
    assert result.metrics["token_iou"].mean == runs["metrics.token_iou"].iloc[0]
    assert set(runs["params.chunker.component._target_"]) == {
        "langchain_text_splitters.RecursiveCharacterTextSplitter"}


def test_the_python_api_notebook_runs_its_cells_in_order(project, run_notebook):
    cells = run_notebook(project, "python_api.ipynb", RAGSWEEP_DATASET="sotu_qa", RAGSWEEP_EXPERIMENT="notebook-api")
    printed = "".join(output.get("text", "") for cell in cells for output in cell.outputs)
    runs = _runs(project, "notebook-api")
    single = runs[runs["tags.ragsweep.config_label"] == "chunker.size=200,chunker=recursive,dataset=sotu_qa,k=5"]
    assert len(single) == 1 and f"token_iou = {single['metrics.token_iou'].iloc[0]:.4f}" in printed
    assert len(runs) == 4  # the grid's recursive k=5 is the single run's configuration (size 200 is the default): reused
    comparison = cells[-1].outputs[0]["data"]["text/plain"]
    assert "'p_value'" in comparison and "'verdict'" in comparison and "'queries': 68" in comparison


class Interrupting:
    """Raises what interrupting a notebook's kernel raises, wherever the code is at that moment."""

    name, version = "interrupting", "1"

    def generate(self, question: str, passages: list[str]) -> str:
        raise KeyboardInterrupt


def test_interrupting_a_sweep_from_python_closes_the_job_and_the_parent_as_killed(project):
    import mlflow

    ev = Evaluation(experiment="interrupted", project=project)
    with pytest.raises(KeyboardInterrupt):
        ev.sweep({"k": [3], "generator": [Interrupting()]}, overrides=["judge=none"])
    runs = mlflow.search_runs(experiment_names=["interrupted"])
    assert sorted(runs["tags.ragsweep.role"]) == ["job", "parent"] and set(runs.status) == {"KILLED"}


def test_a_retriever_function_returning_scored_texts_is_located_in_any_document(project):
    documents = {"a": Document("a", "Paris is the capital of France. Berlin is the capital of Germany."),
                 "b": Document("b", "The Seine flows through Paris. The Spree flows through Berlin.")}
    dataset = Dataset("rivers", documents, [Query("q1", "Which river flows through Berlin?", (Span("b", 31, 62),)),
                                            Query("q2", "What is the capital of France?", (Span("a", 0, 31),))])

    def search(question: str, k: int) -> list[tuple[str, float]]:
        if "river" in question:  # the second text differs in case and spacing from the document's
            return [("The Spree flows through Berlin.", 2.0), ("the seine  flows through paris.", 1.0)][:k]
        return [("Paris is the capital of France.", 3.0)]

    ev = Evaluation(dataset=dataset, experiment="rivers", project=project)
    result = ev.run(retriever=Component(search, name="rivers-search", version="1"), k=2,
                    overrides=["metrics.unit=chars"])
    assert result.per_query.set_index("id").loc["q1", "token_iou"] == pytest.approx(31 / 61)  # 31 of 61 characters
    assert result.per_query.set_index("id").loc["q2", "token_iou"] == 1.0
    run = _runs(project, "rivers").set_index("run_id").loc[result.run_id]
    assert (run["metrics.located_exact"], run["metrics.located_fuzzy"]) == (2, 1)
    import json

    first = json.loads((result.output_dir / "per_query.jsonl").read_text().splitlines()[0])
    assert [(r["doc_id"], r["start"], r["end"], r["score"]) for r in first["retrieved"]] == [
        ("b", 31, 62, 2.0), ("b", 0, 30, 1.0)]

    def inventing(question: str, k: int) -> list[str]:
        return ["Rome is the capital of Italy."]

    with pytest.raises(ConfigError, match="2 of 2 texts it returned are not in the documents"):
        ev.run(retriever=Component(inventing, name="inventing", version="1"), k=1)


def test_a_whole_retriever_named_in_yaml_runs_from_the_command_line_without_chunker_or_store(project, tmp_path):
    own = tmp_path / "my_conf" / "retriever"
    own.mkdir(parents=True)
    (own / "lc_bm25.yaml").write_text(
        "_target_: ragsweep.retrieval.own.OwnRetriever\n"
        "component:\n  _target_: tests.own_components.sotu_bm25\n  chunk_size: 400\n  k: 5\n")
    cli = _sweep_py(project, "--config-dir", str(tmp_path / "my_conf"), "retriever=lc_bm25", "k=5",
                    "experiment=yaml-whole")
    assert cli.returncode == 0, cli.stderr[-3000:]
    run = _runs(project, "yaml-whole").iloc[0]
    assert run["params.retriever"] == "lc_bm25" and run["metrics.located_exact"] == 68 * 5
    assert pd.isna(run.get("params.chunker")) and pd.isna(run.get("params.chunker._target_"))
    assert pd.isna(run.get("params.store._target_")) and pd.isna(run.get("metrics.recall"))
    assert run["metrics.token_iou"] > 0


def test_a_large_per_query_file_is_kept_gzipped_and_its_readers_read_it(project, monkeypatch):
    """Over `per_query.COMPRESS_OVER` bytes a job keeps per_query.jsonl.gz, in its folder and in MLflow; the
    result, the paired comparison and the diff, which read it from the folder or download it, find it."""
    from ragsweep import per_query

    monkeypatch.setattr(per_query, "COMPRESS_OVER", 0)
    evaluation = Evaluation(experiment="gzipped", project=project)
    first, second = evaluation.run(retriever="bm25", k=3), evaluation.run(retriever="bm25", k=5)
    assert (first.output_dir / per_query.COMPRESSED).is_file() and not (first.output_dir / per_query.NAME).exists()
    assert len(first.per_query) == 68 and first.per_query["recall"].mean() == pytest.approx(
        first.metrics["recall"].mean)
    assert evaluation.compare(first.run_id, second.run_id, "recall")["queries"] == 68
    assert len(evaluation.diff(first.run_id, second.run_id, "recall").table) == 68


def test_a_sweep_keeping_per_query_for_its_best_run_drops_the_others_and_says_why(project):
    """`tracking.per_query_top=1`: when the sweep ends, only its best run by the sweep's metric keeps per_query.jsonl
    in MLflow; the other is tagged, and a reader needing it names the setting and the way back."""
    import mlflow

    evaluation = Evaluation(experiment="top", project=project)
    table = evaluation.sweep({"k": [3, 5]}, overrides=["retriever=bm25", "tracking.per_query_top=1"], metric="recall")
    best, other = table.run_id
    client = mlflow.MlflowClient(f"sqlite:///{project}/mlruns/mlflow.db")
    assert "per_query.jsonl" in [f.path for f in client.list_artifacts(best)]
    assert not [f.path for f in client.list_artifacts(other) if f.path.startswith("per_query")]
    assert client.get_run(other).data.tags["ragsweep.per_query"] == "dropped"
    assert "ragsweep.per_query" not in client.get_run(best).data.tags
    with pytest.raises(ValueError, match=r"dropped when its sweep ended \(tracking.per_query_top.*k=3.*force=true"):
        evaluation.compare(best, other, "recall")
