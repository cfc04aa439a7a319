"""How the span_trained relevance judge does on questions written after its recipe was fixed.

Every figure for `span_trained` in docs/benchmarks/judges.md is out of fold, but its recipe (the word
coverage, the context step and their weights) was chosen while looking at chroma_general's questions. The
questions of `benchmarks/data/relevance_heldout.jsonl` were written afterwards, over the same five corpora,
each answered by a passage no chroma_general question's reference overlaps, and none of them was looked at
before this script ran. They are joined to chroma_general's 472 questions as one native dataset (built in
the work folder from `<data>/chroma_general`; the corpora are not copied into the repository), and

    python sweep.py -m generator=none k=3 relevance_judge=span_trained,lexical
                       ++relevance_judge.context_weight=0,1 dataset=native
                       dataset.path=<work>/dataset +force=true

runs through the real runner: one pair of fold models trained on the joined questions, each question scored
by the model that did not see its spans. The AUC of its pair scores against the span labels is then counted
apart over the new questions and over chroma_general's.

Prints the table (each AUC with a 95% interval from a bootstrap over questions) and, as its last line,
`heldout_auc=X chroma_general_auc=Y` (span_trained, context_weight 1). Run it alone on the machine: it trains
two encoders (about 12 min on 2 cores); `--workdir` keeps them, and a rerun there takes a few minutes.

`--smallest` (what `make test` runs): benchmarks/smallest.py's short addresses, 18 of their questions and 3 new
ones; span_trained alone, trained on 4 examples.

Usage: python benchmarks/relevance_heldout.py [--data ../shared/data] [--workdir DIR] [--k 3] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "data" / "relevance_heldout.jsonl"


def write_dataset(data: Path, folder: Path, questions: Path = QUESTIONS) -> dict[str, str]:
    """A native dataset of chroma_general's corpora and questions plus the new ones (`questions`); each new id's
    corpus."""
    from ragsweep.data.chroma_general import ChromaGeneralDataset

    chroma = ChromaGeneralDataset(str(data / "chroma_general")).load()
    (folder / "documents").mkdir(parents=True, exist_ok=True)
    for document in chroma.documents.values():
        (folder / "documents" / f"{document.id}.txt").write_text(document.text, encoding="utf-8")
    lines = [{"id": query.id, "question": query.text, "corpus": query.corpus,
              "references": [{"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in query.references]}
             for query in chroma.queries]
    new = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    (folder / "queries.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines + new),
                                          encoding="utf-8")
    return {line["id"]: line["corpus"] for line in new}


Pairs = list[tuple[float, int]]  # one question's (score, label) pairs


def auc(questions: list[Pairs], resamples: int = 2000) -> tuple[float, float, float, int, int]:
    """sklearn's ROC AUC of the pooled pairs against their labels, its 95% interval from a bootstrap over
    whole questions (a question's passages are resampled together, as they are scored together), and the
    pair and relevant counts; nan for the AUC and interval of a group whose pairs all share a label (none
    relevant: a few questions, at --smallest)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    labels = [label for question in questions for _, label in question]
    if len(set(labels)) < 2:
        return float("nan"), float("nan"), float("nan"), len(labels), sum(labels)

    def pooled(chosen: list[Pairs]) -> float:
        pairs = [pair for question in chosen for pair in question]
        return roc_auc_score([label for _, label in pairs], [score for score, _ in pairs])

    rng = np.random.default_rng(0)
    draws = []
    for _ in range(resamples):
        chosen = [questions[i] for i in rng.integers(0, len(questions), len(questions))]
        if len({label for question in chosen for _, label in question}) == 2:
            draws.append(pooled(chosen))
    low, high = np.percentile(draws, [2.5, 97.5]) if draws else (float("nan"), float("nan"))
    return pooled(questions), float(low), float(high), len(labels), sum(labels)


def labelled_pairs(run: Path, new: dict[str, str]) -> tuple[dict[str, list[Pairs]], int]:
    """A run's scored, labelled pairs, question by question, by group (`new`, `chroma_general` and
    `new: <corpus>`), and how many labelled pairs the judge failed to score (left out, and said)."""
    groups: dict[str, list[Pairs]] = defaultdict(list)
    failed = 0
    for line in (run / "per_query.jsonl").read_text().splitlines():
        record = json.loads(line)
        relevance = record["relevance"]
        scored = zip(relevance["scores"], relevance["labels"], strict=True)
        labelled = [(score, label) for score, label in scored if label is not None]
        pairs = [(score, label) for score, label in labelled if score is not None]
        failed += len(labelled) - len(pairs)
        if record["id"] in new:
            groups["new"].append(pairs)
            groups[f"new: {new[record['id']]}"].append(pairs)
        else:
            groups["chroma_general"].append(pairs)
    return groups, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="the folder holding chroma_general/ (default ../shared/data)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the dataset, stage cache and MLflow store here (a rerun reuses the cache)")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--smallest", action="store_true", help="tiny data, span_trained alone (make test runs it)")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ragsweep-relevance-heldout-"))
    judges = ["relevance_judge=span_trained,lexical"]
    if args.smallest:
        from smallest import chroma_general

        made = chroma_general(work / "smallest")  # its own new questions: the shipped ones cite the real corpora
        new = write_dataset(made, work / "dataset", made / "relevance_heldout.jsonl")
        judges = ["relevance_judge=span_trained", "relevance_judge.examples=4", "relevance_judge.progress=false"]
    else:
        new = write_dataset((args.data or ROOT.parent / "shared" / "data").resolve(), work / "dataset")
    outputs = work / "outputs" / time.strftime("%Y%m%d-%H%M%S")
    print(f"{len(new)} new questions; work folder {work}", flush=True)

    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "sweep.py"), "-m", "generator=none", f"k={args.k}",
                    *judges, "++relevance_judge.context_weight=0,1",
                    "dataset=native", f"dataset.path={work / 'dataset'}", f"paths.root={work}",
                    f"paths.outputs={outputs}", "experiment=relevance-heldout", "+force=true"],
                   cwd=work, check=True)

    print(f"\nk={args.k}, the sweep took {(time.perf_counter() - started) / 60:.1f} min; AUC [95% interval] "
          "(pairs, relevant) against the span labels\n")
    report(outputs, new)


def report(outputs: Path, new: dict[str, str]) -> None:
    """The table of every judge's AUC by group of questions, and the last line."""
    columns = {}
    for per_query in sorted(outputs.glob("**/per_query.jsonl")):
        cfg = OmegaConf.load(per_query.parent / "config.yaml")
        judge = cfg.relevance_judge._target_.rsplit(".", 1)[-1]
        column = (judge, float(cfg.relevance_judge.context_weight))
        columns[column], failed = labelled_pairs(per_query.parent, new)
        if failed:
            print(f"{judge}, context_weight {column[1]:g}: {failed} labelled pairs the judge failed "
                  "to score, left out of its AUC")
    groups = sorted({group for by_group in columns.values() for group in by_group},
                    key=lambda group: (group != "new", group))
    print("| questions | " + " | ".join(f"{judge}, context_weight {weight:g}" for judge, weight in columns)
          + " |\n|---|" + "---|" * len(columns))
    found = {(column, group): auc(by_group[group])
             for column, by_group in columns.items() for group in groups}
    for group in groups:
        cells = [f"{value:.3f} [{low:.3f}, {high:.3f}] ({n}, {relevant})"
                 for value, low, high, n, relevant in (found[column, group] for column in columns)]
        print(f"| {group} | " + " | ".join(cells) + " |")
    shipped = ("SpanTrainedRelevanceJudge", 1.0)
    print(f"heldout_auc={found[shipped, 'new'][0]:.3f} "
          f"chroma_general_auc={found[shipped, 'chroma_general'][0]:.3f}")


if __name__ == "__main__":
    main()
