"""Every kind of bad input a user can type, refused before any work: exit 2, one line, nothing left.

Each row runs `python sweep.py ARGS` as a user does, in an empty folder that is the project root
(paths.root=., so mlruns/, outputs/ and .cache/ would appear there), and asserts the exit code,
that stderr is `ragsweep: error: <message>` with no traceback, and that the folder holds only what
the row itself put there: no MLflow store, no run, no Hydra output folder, no cache entry.

Read-only folders are real read-only mounts (a tmpfs mounted `ro` in a private mount namespace made
with `unshare -m`): the tests run as root, for whom permission bits do not stop a write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = "The quick brown fox jumps over the lazy dog."


def _native(folder: Path, queries: list | str | None = None, docs: dict[str, str] | None = None) -> Path:
    """A native dataset under `folder/data`: documents/*.txt and queries.jsonl."""
    root = folder / "data"
    (root / "documents").mkdir(parents=True)
    for name, text in (docs if docs is not None else {"fox": DOC}).items():
        (root / "documents" / f"{name}.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / "documents" / f"{name}.txt").write_text(text)
    if queries is None:
        queries = [_query()]
    lines = queries if isinstance(queries, str) else "\n".join(json.dumps(q) for q in queries)
    (root / "queries.jsonl").write_text(lines + "\n")
    return root


def _query(**changes) -> dict:
    return {"id": "q1", "question": "What jumps?", "references": [{"doc_id": "fox", "start": 4, "end": 19}],
            **changes}


def _broken_grid(folder: Path) -> Path:
    (folder / "own" / "sweep").mkdir(parents=True)
    (folder / "own" / "sweep" / "broken.yaml").write_text("# @package _global_\nk: [3\n  chunker: {")
    return folder / "own"


def _headless_grid(folder: Path) -> Path:
    """A named grid whose file lacks `# @package _global_`, so Hydra puts it under a `sweep:` key."""
    (folder / "own" / "sweep").mkdir(parents=True)
    (folder / "own" / "sweep" / "headless.yaml").write_text("hydra:\n  sweeper:\n    params:\n      k: 3,5\n")
    return folder / "own"


def _labels(folder: Path) -> Path:
    path = folder / "labels.jsonl"
    path.write_text(json.dumps({"id": "no-such-question", "claim": "The fox jumps.", "label": 1}) + "\n")
    return path


def _files(folder: Path, files: dict[str, str], doc: str = "fox", locked: bool = False,
           fields: dict | None = None) -> Path:
    """A folder of files (`dataset=files`) under `folder/data`, and a question quoting `doc`; `locked` adds a PDF
    encrypted with a password; `fields` are added to the quote."""
    root = folder / "data"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    if locked:
        import pypdf

        writer = pypdf.PdfWriter()
        writer.add_blank_page(200, 200)
        writer.encrypt("secret", algorithm="AES-128")
        with open(root / "locked.pdf", "wb") as handle:
            writer.write(handle)
    quote = {"doc": doc, "quote": "quick brown fox", **(fields or {})}
    question = {"id": "q1", "question": "What jumps?", "evidence": [quote]}
    (root / "questions.jsonl").write_text(json.dumps(question) + "\n")
    return root


def _without_queries(root: Path) -> Path:
    """A native dataset's folder with its documents and no queries.jsonl."""
    (root / "queries.jsonl").unlink()
    return root


def _files_only(folder: Path) -> Path:
    """A folder of documents (`dataset=files`) with no questions file."""
    (folder / "data").mkdir()
    (folder / "data" / "fox.md").write_text(DOC)
    return folder / "data"


def _files_args(files: dict[str, str], **kwargs) -> Callable[[Path], list[str]]:
    return lambda folder: ["dataset=files", f"dataset.path={_files(folder, files, **kwargs)}"]


def _native_args(**kwargs) -> Callable[[Path], list[str]]:
    return lambda folder: ["dataset=native", f"dataset.path={_native(folder, **kwargs)}"]


def _a_file(folder: Path) -> Path:
    path = folder / "a-file"
    path.write_text("not a folder\n")
    return path


ON_CRLF = {"doc_id": "fox", "start": 11, "end": 26, "content": "quick brown fox"}  # counted on "Title\r\n" + DOC
RACE = ["-m", "hydra/sweeper=racing", "k=1,3", "hydra.sweeper.racing.metric=recall"]


@dataclass
class Case:
    args: list[str] | Callable[[Path], list[str]]  # a callable makes its files in the folder first
    message: str  # what the error line must contain
    read_only: bool = False  # run with `folder/ro` mounted read-only
    kept: str | None = None  # a folder the refusal may leave, and why: finished work it never pays for again


CASES = {
    # values of top-level settings
    "k zero": Case(["k=0"], "k must be a positive integer, got 0; set e.g. k=5"),
    "k negative": Case(["k=-3"], "k must be a positive integer, got -3"),
    "k not a number": Case(["k=ten"], "k must be a positive integer, got 'ten'"),
    "k deleted": Case(["~k"], "k must be a positive integer, got None"),
    "depth zero": Case(["depth=0"], "depth must be a positive integer, got 0"),
    "bootstrap samples negative": Case(["bootstrap_samples=-1"], "bootstrap_samples must be a positive integer"),
    "optimized metric unknown": Case(["optimized_metric=accuracy"], "optimized_metric=accuracy is not a metric"),
    "price negative": Case(["prices.cpu_second=-1"], "prices.cpu_second=-1: give a price >= 0"),
    "budget negative": Case(["budget=-1"], "budget=-1: give the money a sweep may spend"),
    "price of a model with a typo": Case(["prices.models={gpt-4o:{inpt:2.5}}"],
                                         "prices.models.gpt-4o.inpt: unknown key"),
    # keys no stage reads
    "unknown top-level key added": Case(["+foo=1"], "foo: no stage reads this key"),
    "unknown top-level key set": Case(["foo=1"], "foo: no stage reads this key"),
    "top-level typo": Case(["+dept=5"], "dept: no stage reads this key; did you mean depth?"),
    "component key typo": Case(["chunker.sise=100"],
                               "chunker.sise: RecursiveChunker takes no 'sise'; did you mean chunker.size?"),
    "component key typo added": Case(["+chunker.sise=100"], "its keys are chunker.size, chunker.overlap"),
    "store key of another store": Case(["+store.ef_search=10"], "store.ef_search: NumpyStore takes no 'ef_search'"),
    "cache key unknown": Case(["+cache.size=10"], "cache.size: the cache reads only enabled, dir, locks"),
    # options
    "chunker option unknown": Case(["chunker=nope"], "chunker=nope is not an option of 'chunker'"),
    "option unknown in a sweep": Case(["-m", "chunker=recursive,nope"], "chunker=nope is not an option of 'chunker'"),
    "named grid not YAML": Case(lambda f: ["-m", "--config-dir", str(_broken_grid(f)), "+sweep=broken"],
                                "sweep/broken.yaml: not valid YAML (expected ',' or ']'"),
    "named grid unknown": Case(["-m", "+sweep=nope"], "sweep=nope is not an option of 'sweep'"),
    "named grid without its package header": Case(
        lambda f: ["-m", "--config-dir", str(_headless_grid(f)), "+sweep=headless"],
        "sweep: a named grid's settings (hydra) landed under a 'sweep:' key, as its file lacks the header: make "
        "`# @package _global_` the first line of sweep/<name>.yaml"),
    "group chosen twice": Case(["chunker=fixed", "chunker=sentence"],
                               "chunker is chosen 2 times (chunker=fixed, chunker=sentence); choose it once, or sweep "
                               "its options with -m chunker=fixed,sentence"),
    "exported config unknown": Case(["--config-name", "best/nope"], "Cannot find primary config 'best/nope'"),
    "target not importable": Case(["chunker._target_=ragsweep.chunking.nope.Nope"],
                                  "chunker._target_=ragsweep.chunking.nope.Nope cannot be imported (No module named"),
    # overrides Hydra cannot read or that need -m
    "several values without -m": Case(["k=1,2"], "k=1,2 gives several values: add -m"),
    "override syntax": Case(["k=[1"], "cannot read the overrides:"),
    "path with spaces unquoted": Case(["dataset=native", "dataset.path=my", "docs/x"],
                                      "cannot read the overrides: docs/x is not KEY=VALUE: the shell split the value of "
                                      """dataset.path at its spaces; quote it: 'dataset.path="my docs/x"'"""),
    "path with a parenthesis unquoted": Case(["dataset=native", "dataset.path=/data/a(1)"],
                                             "dataset.path=/data/a(1): Hydra's grammar reads this value only in quotes; "
                                             """quote it: 'dataset.path="/data/a(1)"'"""),
    # ~ is the home folder, as a shell reads it (the shell leaves it alone after `dataset.path=`)
    "path in a home folder missing": Case(["dataset=native", "dataset.path=~/no-such-ragsweep-data"],
                                          "/no-such-ragsweep-data does not exist; point dataset.path at a folder"),
    "append an existing key": Case(["+k=3"], "Could not append to config. An item is already at 'k'"),
    # component values
    "overlap not below size": Case(["chunker.overlap=200"], "chunker.overlap (200) must be smaller than chunker.size (200)"),
    "chunk size zero": Case(["chunker=fixed", "chunker.size=0"], "chunker:"),
    "embedder batch size zero": Case(["embedder.batch_size=0"], "embedder:"),
    "numpy batch size zero": Case(["store.batch_size=0"], "store.batch_size must be > 0, got 0"),
    "chroma ef_search zero": Case(["store=chroma", "store.ef_search=0"], "store.ef_search must be > 0, got 0"),
    "qdrant query batch zero": Case(["store=qdrant", "store.query_batch=0"], "store.query_batch must be > 0, got 0"),
    "rrf constant zero": Case(["retriever=hybrid", "retriever.rrf_k=0"], "retriever:"),
    "rerank candidates below k": Case(["reranker=embedding", "reranker.candidates=3", "k=5"],
                                      "reranker.candidates (3) must be >= k (5)"),
    "cross-encoder model missing": Case(["reranker=cross_encoder", "reranker.model=/no/such/model"],
                                        "reranker.model=/no/such/model cannot be loaded"),
    "cross-encoder model required": Case(["reranker=cross_encoder"], "reranker.model is required"),
    "sentence-transformers model missing": Case(["embedder=sentence_transformers", "embedder.model=/no/such/model"],
                                                "embedder.model=/no/such/model cannot be loaded offline"),
    # generators
    "generator model file missing": Case(["generator=llama_cpp", "generator.model_path=/no/such/model.gguf"],
                                         "generator.model_path=/no/such/model.gguf does not exist"),
    "generator model not a gguf": Case(lambda f: ["generator=llama_cpp", f"generator.model_path={_a_file(f)}"],
                                       "llama.cpp cannot load it"),
    "unknown prompt": Case(["generator=extractive", "generator.prompt=qa_typo"],
                           "generator.prompt=qa_typo is neither a shipped prompt (qa, qa_cite)"),
    "error budget above one": Case(["generator=extractive", "generator.max_error_rate=2"],
                                   "generator.max_error_rate must be a share between 0 and 1, got 2"),
    "no sentences in an answer": Case(["generator=extractive", "generator.max_sentences=0"],
                                      "generator.max_sentences must be an integer >= 1, got 0"),
    "endpoint without base_url": Case(["generator=openai", "generator.model=m"], "generator.base_url is required"),
    "endpoint not answering": Case(["generator=openai", "generator.model=m", "generator.base_url=http://127.0.0.1:9/v1"],
                                   "generator.base_url=http://127.0.0.1:9/v1 does not answer"),
    "endpoint key variable unset": Case(["generator=openai", "generator.model=m", "generator.base_url=http://127.0.0.1:9/v1",
                                         "generator.api_key_env=RAGSWEEP_NO_SUCH_KEY"],
                                        "generator.api_key_env=RAGSWEEP_NO_SUCH_KEY names an environment variable"),
    "generator takes no such key": Case(["generator=llama_cpp", "generator.temprature=0"],
                                        "did you mean generator.temperature?"),
    # judges (read only with a generator)
    "judge threshold above one": Case(["generator=extractive", "judge=lexical", "judge.threshold=1.5"],
                                      "judge.threshold must be a number in [0, 1], got 1.5"),
    "judge failure budget above one": Case(["generator=extractive", "judge=lexical", "judge.max_failure_rate=2"],
                                           "judge.max_failure_rate must be a share between 0 and 1, got 2"),
    "negative relevance context weight": Case(["relevance_judge=lexical", "relevance_judge.context_weight=-1"],
                                              "relevance_judge.context_weight must be a number between 0 and 10, "
                                              "got -1"),
    "triad weights not three": Case(["generator=extractive", "judge=lexical", "+judge.triad_weights=[1,2]"],
                                    "judge.triad_weights must be three weights >= 0"),
    "judge takes no such key": Case(["generator=extractive", "judge=lexical", "+judge.treshold=0.4"],
                                    "did you mean judge.threshold?"),
    "judge labels of no question": Case(
        lambda f: ["generator=extractive", "judge=lexical", f"judge.labels={_labels(f)}"],
        "none of its question ids (no-such-question) is a question of dataset sotu_qa"),
    # whole grids, checked before the first job
    "one bad point in a grid": Case(["-m", "k=6,0,7"], "1 of 3 points of the sweep cannot run; nothing was started"),
    "bad points of a named grid": Case(["-m", "+sweep=quick", "k=0,-1"], "4 of 4 points of the sweep cannot run"),
    "bad bound of an optuna space": Case(["-m", "+sweep=optuna_retrieval", "k=choice(0,3)"],
                                         "9 of 18 points of the sweep cannot run"),
    "bad end of a range": Case(["-m", "k=range(0,3)"], "1 of 3 points of the sweep cannot run"),
    "joblib without workers": Case(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0"],
                                   "hydra.launcher.n_jobs=0 is not a worker count"),
    # data
    "dataset folder missing": Case(["dataset=chroma_general", "dataset.path=/no/such/dir"],
                                   "dataset.path=/no/such/dir does not exist"),
    "dataset path is a file": Case(lambda f: ["dataset=native", f"dataset.path={_a_file(f)}"], "is a file; point dataset.path at the folder"),
    "native without documents": Case(_native_args(docs={}), "no *.txt documents found"),
    "native empty document": Case(_native_args(docs={"fox": DOC, "empty": " \n"}),
                                  "documents/empty.txt: document 'empty' is empty"),
    "native duplicate query id": Case(_native_args(queries=[_query(), _query()]),
                                      "queries.jsonl:2: duplicate query id 'q1' (first at"),
    "dataset limit and sample both": Case(["dataset.limit=5", "dataset.sample=5"],
                                          "dataset.limit and dataset.sample both set; keep one"),
    "dataset sample zero": Case(["dataset.sample=0"], "dataset.sample must be a positive integer or null, got 0"),
    "dataset limit zero": Case(["dataset.limit=0"], "dataset.limit must be a positive integer or null, got 0"),
    "native without queries file": Case(
        lambda f: ["dataset=native", f"dataset.path={_without_queries(_native(f))}"],
        "queries.jsonl: missing; it should hold one JSON question per line"),
    "squad file missing": Case(["dataset=squad", "dataset.path=/no/such.json"],
                               "dataset.path=/no/such.json does not exist; point dataset.path at a SQuAD JSON file"),
    "native invalid JSON": Case(_native_args(queries="{not json"), "queries.jsonl:1: invalid JSON"),
    "native span outside document": Case(_native_args(queries=[_query(references=[{"doc_id": "fox", "start": 40, "end": 99}])]),
                                         "queries.jsonl:1 references[0]: span [40, 99) is invalid"),
    "native span content differs": Case(
        _native_args(queries=[_query(references=[{"doc_id": "fox", "start": 4, "end": 9, "content": "slow"}])]),
        "content 'slow' differs from the document text"),
    "native unknown document": Case(_native_args(queries=[_query(references=[{"doc_id": "cat", "start": 0, "end": 3}])]),
                                    "unknown doc_id 'cat'"),
    "native unknown field in a question": Case(_native_args(queries=[_query(query="What jumps?")]),
                                               "queries.jsonl:1: unknown field 'query'; did you mean 'question'?"),
    "native unknown field in a reference": Case(
        _native_args(queries=[_query(references=[{"doc_id": "fox", "start": 4, "end": 19, "text": "brown fox"}])]),
        "queries.jsonl:1 references[0]: unknown field 'text'; did you mean 'content'?"),
    "native doc_id with its .txt": Case(
        _native_args(queries=[_query(references=[{"doc_id": "fox.txt", "start": 4, "end": 19}])]),
        "unknown doc_id 'fox.txt'; drop the '.txt': the document's id is 'fox'"),
    "native doc_id without its subfolder": Case(
        _native_args(queries=[_query(references=[{"doc_id": "fox", "start": 4, "end": 19}])],
                     docs={"animals/fox": DOC}),
        "unknown doc_id 'fox'; did you mean 'animals/fox'? a document in a subfolder is named by its path"),
    "native offsets counted on CRLF": Case(
        _native_args(queries=[_query(references=[ON_CRLF])], docs={"fox": "Title\r\n" + DOC}),
        "its offsets were counted on the text with \\r\\n (CRLF) line endings, 1 line break(s) before 11"),
    "beir folder without corpus": Case(lambda f: ["dataset=beir", f"dataset.path={f}"], "corpus.jsonl: missing"),
    "files of a type no parser reads": Case(_files_args({"fox.md": DOC, "table.xlsx": "x"}),
                                            "table.xlsx: no parser reads .xlsx"),
    "files unknown field in evidence": Case(
        lambda f: ["dataset=files", f"dataset.path={_files(f, {'fox.md': DOC}, fields={'doc_id': 'fox'})}"],
        "evidence[0]: unknown field 'doc_id'; did you mean 'doc'?"),
    "files without questions": Case(lambda f: ["dataset=files", f"dataset.path={_files_only(f)}"],
                                    "no questions.jsonl or questions.csv; add one (format: `ragsweep docs dataset`"),
    "files quoting an unknown document": Case(_files_args({"fox.md": DOC}, doc="fax"),
                                              "evidence[0] doc: unknown document 'fax'"),
    # the files read before the refusal stay parsed in the stage cache: removing the file, the user pays nothing again
    "files PDF encrypted with a password": Case(_files_args({"fox.md": DOC}, locked=True),
                                                "locked.pdf: it is encrypted with a password", kept=".cache"),
    "parser option unknown": Case(["parser=nope"], "parser=nope is not an option of 'parser'"),
    # folders the job would write
    "cache folder read-only": Case(lambda f: [f"cache.dir={f}/ro/cache"], "cache.dir: ", read_only=True),
    "cache folder is a file": Case(lambda f: [f"cache.dir={_a_file(f)}"], "is a file, not a folder; point cache.dir"),
    "cache folder under a file": Case(lambda f: [f"cache.dir={_a_file(f)}/cache"], "is a file, not a folder; point cache.dir"),
    "output folder read-only": Case(lambda f: [f"paths.outputs={f}/ro/outputs"], "paths.outputs: ", read_only=True),
    "MLflow store read-only": Case(lambda f: [f"paths.mlruns={f}/ro/mlruns"], "tracking.uri: ", read_only=True),
    "MLflow store in a missing folder": Case(lambda f: [f"tracking.uri=sqlite:///{f}/no/such/dir/x.db"],
                                            "/no/such/dir does not exist; create it or point tracking.uri"),
    "MLflow store not SQLite": Case(lambda f: [f"tracking.uri=sqlite:///{_a_file(f)}"],
                                    "a-file is not a readable SQLite database (file is not a database)"),
    "MLflow store under a file": Case(lambda f: [f"tracking.uri=sqlite:///{_a_file(f)}/mlflow.db"],
                                      "is a file, not a folder; point tracking.uri"),
    "race on a run-level metric": Case([*RACE, "hydra.sweeper.racing.metric=latency_ms_p95"],
                                       "a race compares per-question values with known bounds"),
    "race schedule short of 100%": Case([*RACE, "hydra.sweeper.racing.schedule=[0.1,0.5]"],
                                        "racing.schedule must end at 1.0 (all questions)"),
    "race delta outside (0, 1)": Case([*RACE, "hydra.sweeper.racing.delta=1"], "must be in (0, 1)"),
    "race of one configuration": Case(["-m", "hydra/sweeper=racing", "k=3", "hydra.sweeper.racing.metric=recall"],
                                      "a race needs at least two configurations"),
    "race on a list of metrics": Case(["-m", "hydra/sweeper=racing", "k=1,3", "optimized_metric=[recall,latency_ms_p95]"],
                                      "races on one metric and optimized_metric=[recall,latency_ms_p95] names 2"),
    "study directions against the registry": Case(["-m", "+sweep=optuna_pareto", "hydra.sweeper.direction=[maximize,maximize]"],
                                                  "hydra.sweeper.direction=[maximize,maximize] does not match optimized_metric="
                                                  "[token_iou,latency_ms_p95]: the metric registry gives [maximize,minimize]"),
    "race on an unvalidated judge": Case([*RACE, "generator=extractive", "judge=lexical",
                                          "hydra.sweeper.racing.metric=faithfulness"],
                                         "its judge has no held-out AUC of at least 0.6"),
}


ENV = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_refused_before_any_work_with_one_line(name, tmp_path, preloaded):
    """Each row is `python sweep.py ARGS` in a process of its own, forked from one that has imported what
    sweep.py imports (tests/preloaded.py); a read-only row runs the real command in a mount namespace."""
    case = CASES[name]
    folder = tmp_path / "project"
    folder.mkdir()
    args = case.args(folder) if callable(case.args) else case.args
    before = sorted(folder.rglob("*"))
    if case.read_only:
        (folder / "ro").mkdir()
        mount = f"mount -t tmpfs -o ro tmpfs {folder / 'ro'} && exec \"$@\""
        command = ["unshare", "-m", "sh", "-c", mount, "sh", sys.executable, str(ROOT / "sweep.py"), *args]
        done = subprocess.run(command, cwd=folder, env=ENV, capture_output=True, text=True, timeout=300)
        code, stderr = done.returncode, done.stderr
    else:
        code, _, stderr = preloaded.run("sweep.py", args, folder, ENV, tmp_path)
    errors = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert errors and all(line.startswith("ragsweep: error: ") for line in errors), stderr[-3000:]
    if not args or args[0] != "-m":
        assert len(errors) == 1 and case.message in errors[0], errors
    else:  # a grid's first line counts its bad points, and a line per problem follows
        assert case.message in "\n".join(errors), errors
    if case.read_only:
        shutil.rmtree(folder / "ro")  # the empty mount point the row made
    kept = folder / case.kept if case.kept else None
    left = [path for path in sorted(folder.rglob("*")) if kept is None or not path.is_relative_to(kept)]
    assert left == before, "a refused command left files behind"


def test_the_table_covers_at_least_a_hundred_kinds():
    assert len(CASES) >= 100


def test_k_beyond_the_chunks_fails_its_job_with_one_line_naming_k(tmp_path):
    """A one-sentence document makes one chunk, so k=3 would rank every chunk (recall 1 for nothing): the job
    stops after chunking, before retrieval, saying so and the most k can be."""
    folder = tmp_path / "project"
    folder.mkdir()
    result = subprocess.run([sys.executable, str(ROOT / "sweep.py"), *_native_args()(folder), "k=3", "retriever=bm25"],
                            cwd=folder, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0, result.stderr[-3000:]
    assert ("k=3 is more than the 1 chunks this chunker made of data, so every chunk would be retrieved; set k to 1 "
            "or less") in result.stderr, result.stderr[-3000:]


# ---- a folder the work cannot write: one line, exit 1, nothing half-written -----------------------------------

def _in_mounts(mounts: str, folder: Path, *command: str) -> subprocess.CompletedProcess:
    """`command` run in `folder` inside a mount namespace of its own, after the shell commands `mounts`."""
    script = f'{mounts} && cd {folder} && exec "$@"'  # cd after the mounts: a cwd from before sees the folder below
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *command], cwd=folder, env=ENV,
                          capture_output=True, text=True, timeout=300)


def _one_error(done: subprocess.CompletedProcess) -> str:
    """The run's one error line (a sweep adds its summary line, `ragsweep: the sweep stopped early`)."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragsweep: error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    return errors[0]


def test_a_sweep_that_fills_its_cache_disk_stops_in_one_line_naming_the_folder_and_its_free_space(tmp_path):
    """cache.dir on a 4 KB file system: the first job fails (recorded FAILED), the sweep stops rather than fail
    the next job the same way, and no partial cache entry is left."""
    folder, cache = tmp_path / "project", tmp_path / "project" / "cache"
    cache.mkdir(parents=True)
    done = _in_mounts(f"mount -t tmpfs -o size=4k tmpfs {cache}", folder, sys.executable, str(ROOT / "sweep.py"),
                      "-m", f"cache.dir={cache}", "retriever=bm25", "k=3,5")
    assert done.returncode == 1, done.stderr[-3000:]
    error = _one_error(done)
    assert error.startswith("ragsweep: error: job k=3,retriever=bm25 failed and the sweep stops, as every next job "
                            f"would: cannot write {cache}/"), error
    assert f"no space left on the file system of {cache} (" in error and " free); free space there, or point " \
        "cache.dir at another folder with room" in error, error
    assert "0 job(s) finished, 1 failed" in done.stderr
    assert list(cache.iterdir()) == []  # the mount's files went with its namespace; the folder below is untouched


def test_a_single_run_that_fills_its_cache_disk_exits_1_in_one_line(tmp_path):
    folder, cache = tmp_path / "project", tmp_path / "project" / "cache"
    cache.mkdir(parents=True)
    done = _in_mounts(f"mount -t tmpfs -o size=4k tmpfs {cache}", folder, "sh", "-c",
                      f'"$@"; code=$?; find {cache} -name "*.tmp"; exit $code', "sh",
                      sys.executable, str(ROOT / "sweep.py"), f"cache.dir={cache}", "retriever=bm25")
    assert done.returncode == 1, done.stderr[-3000:]
    assert _one_error(done).startswith(f"ragsweep: error: cannot write {cache}/"), done.stderr[-3000:]
    assert ".tmp" not in done.stdout  # no partial entry left on the full disk


@pytest.fixture(scope="module")
def swept_project(tmp_path_factory) -> Path:
    """A project made by `ragsweep init` with one finished run (bm25 on a one-document dataset) in its store."""
    folder = tmp_path_factory.mktemp("swept") / "project"
    ragsweep = str(Path(sys.executable).with_name("ragsweep"))
    for command in ([ragsweep, "init", str(folder)],
                    [ragsweep, "sweep", *_native_args()(folder), "retriever=bm25", "k=1"]):
        done = subprocess.run(command, cwd=folder.parent if command[1] == "init" else folder, env=ENV,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    return folder


@pytest.mark.parametrize(("command", "where"), [("best", "conf/best"), ("report", "reports")])
def test_best_and_report_in_a_read_only_project_say_so_in_one_line(swept_project, command, where):
    """The project folder bind-mounted read-only, as a checkout on a read-only volume is."""
    before = sorted(swept_project.rglob("*"))
    ragsweep = Path(sys.executable).with_name("ragsweep")
    done = _in_mounts(f"mount --bind {swept_project} {swept_project} && mount -o remount,bind,ro {swept_project}",
                      swept_project, str(ragsweep), command)
    assert done.returncode == 1, done.stderr[-3000:]
    assert _one_error(done) == (f"ragsweep: error: cannot write {where}: the file system is read-only; mount it "
                                "writable, or work in a copy you can write"), done.stderr[-3000:]
    assert sorted(swept_project.rglob("*")) == before


FILL = "(dd if=/dev/zero of={0}/filler bs=4k 2>/dev/null || true)"  # writes until the tmpfs at {0} is full


def _store_filled(project: Path, tmp_path: Path) -> str:
    """Mounts that put a copy of `project`'s mlruns/ on a tmpfs over it, then fill that tmpfs."""
    mlruns, disk = project / "mlruns", tmp_path / "disk"
    disk.mkdir()
    return (f"mount -t tmpfs -o size=8m tmpfs {disk} && cp -a {mlruns}/. {disk}/ && mount --bind {disk} {mlruns} "
            f"&& {FILL.format(mlruns)}")


@pytest.mark.parametrize(("sweep", "fix"), [([], "paths.mlruns"), (["-m", "chunker.size=100,200"],
                                                                   "paths.mlruns (or tracking.uri)")])
def test_a_full_disk_under_the_mlflow_store_ends_a_run_or_a_sweep_in_one_line_naming_the_database(
        swept_project, tmp_path, sweep, fix):
    """The project's store copied onto a tmpfs mounted over mlruns/, then filled: SQLite's `database or disk is
    full`, which MLflow raises as no OSError, ends the run (its job) or the sweep (its parent run) before any job."""
    mlruns = swept_project / "mlruns"
    outputs = sorted((swept_project / "outputs").rglob("*"))
    done = _in_mounts(_store_filled(swept_project, tmp_path), swept_project,
                      str(Path(sys.executable).with_name("ragsweep")), "sweep", *sweep,
                      "dataset=native", f"dataset.path={swept_project / 'data'}", "retriever=bm25", "k=1")
    assert done.returncode == 1, done.stderr[-3000:]
    error = _one_error(done)
    assert error.startswith(f"ragsweep: error: cannot write {mlruns / 'mlflow.db'}: no space left on the file system "
                            f"of {mlruns} ("), error
    assert error.endswith(f" free); free space there, or point {fix} at another folder with room"), error
    assert "Traceback" not in done.stdout, done.stdout[-3000:]  # MLflow's own log of the error
    if sweep:
        assert sorted((swept_project / "outputs").rglob("*")) == outputs  # no job started


@pytest.mark.parametrize(("sweep", "folder", "key"), [([], "runs", "hydra.run.dir"),
                                                      (["-m", "k=3,5"], "multirun", "hydra.sweep.dir")])
def test_a_full_disk_under_the_outputs_ends_a_run_or_a_sweep_in_one_line_naming_the_folder(tmp_path, sweep, folder,
                                                                                            key):
    """paths.outputs on a full tmpfs: Hydra writes a run's folder (its .hydra/config.yaml) or a sweep's
    (multirun.yaml) before any job starts, past the preflight, which a disk that fills later gets by."""
    project, outputs = tmp_path / "project", tmp_path / "project" / "outputs"
    outputs.mkdir(parents=True)
    done = _in_mounts(f"mount -t tmpfs -o size=64k tmpfs {outputs} && {FILL.format(outputs)}", project,
                      sys.executable, str(ROOT / "sweep.py"), *sweep, "retriever=bm25")
    assert done.returncode == 1, done.stderr[-3000:]
    error = _one_error(done)
    assert error.startswith(f"ragsweep: error: cannot write outputs/{folder}/"), error  # as paths.root=. names it
    assert f": no space left on the file system of {outputs} (" in error, error
    assert error.endswith(f" free); free space there, or point paths.outputs or {key} at another folder with room")


def test_sync_into_a_store_on_a_full_disk_stops_in_one_line_and_keeps_the_record(swept_project, tmp_path):
    """`ragsweep sync` writes runs into the store: on its full disk it stops at the first record, as every next
    would fail the same way, and the record stays for a sync once there is room."""
    from ragsweep.tracking.record import RECORD_FILE, RunRecord

    mlruns = swept_project / "mlruns"
    record = RunRecord(tmp_path / "job", f"sqlite:///{mlruns / 'mlflow.db'}", "kept", "0" * 32, "k=1", {}, {"k": "1"})
    record.add("metrics", {"recall": 1.0})
    record.not_taken("metrics")
    record.end("FINISHED")
    kept = (tmp_path / "job" / RECORD_FILE).read_text()
    done = _in_mounts(_store_filled(swept_project, tmp_path), swept_project,
                      str(Path(sys.executable).with_name("ragsweep")), "sync", str(tmp_path / "job"))
    assert done.returncode == 1, done.stderr[-3000:]
    error = _one_error(done)
    assert error.startswith(f"ragsweep: error: cannot write {mlruns / 'mlflow.db'}: no space left on the file system "
                            f"of {mlruns} ("), error
    assert error.endswith(" free); free space there, or point --tracking-uri at another folder with room"), error
    assert (tmp_path / "job" / RECORD_FILE).read_text() == kept


def test_gate_on_a_full_store_stops_in_the_one_line_of_its_rerun(swept_project, tmp_path):
    """`ragsweep gate` reruns the baseline as a sweep does, which the full store stops: its one line, exit 1."""
    project = tmp_path / "project"
    shutil.copytree(swept_project, project, symlinks=True)
    ragsweep = str(Path(sys.executable).with_name("ragsweep"))
    exported = subprocess.run([ragsweep, "best"], cwd=project, env=ENV, capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stderr[-3000:]
    baseline = next((project / "conf" / "best").glob("*.yaml")).relative_to(project)
    done = _in_mounts(_store_filled(project, tmp_path), project, ragsweep, "gate", "--baseline", str(baseline))
    assert done.returncode == 1, done.stderr[-3000:]
    assert _one_error(done).startswith(f"ragsweep: error: the rerun of {baseline} stopped: cannot write "
                                       f"{project / 'mlruns' / 'mlflow.db'}: no space left on the file system of "
                                       f"{project / 'mlruns'} ("), done.stderr[-3000:]
