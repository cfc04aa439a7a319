"""`ragsweep generate`: a span-grounded question set from your own documents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragsweep.disk import cannot_write, write_refused
from ragsweep.runner.entry import conf_dir



def generate_command(args: argparse.Namespace) -> int:
    """Write a span-grounded question set (a `native` dataset) from a folder of documents or a dataset's."""
    from ragsweep.cache import StageCache
    from ragsweep.data.base import DatasetError
    from ragsweep.data.native import read_documents
    from ragsweep.runner.compose import compose_config
    from ragsweep.runner.errors import ConfigError
    from ragsweep.runner.build import Built, group_config, instantiate_stage
    from ragsweep.runner.generate import QuestionSetWriter, too_many_failed

    overrides = [f"paths.root={args.project.resolve()}",
                 *([f"+dataset={args.dataset}"] if args.dataset else []),
                 *([f"generator={args.generator}"] if args.generator else []),
                 *([f"questions_per_document={args.questions_per_document}"] if args.questions_per_document else []),
                 *args.overrides]
    try:
        conf, own = conf_dir(args.project, "generate"), args.project / "conf"
        if own.is_dir() and conf != own:  # the project's own datasets and components, beside the packaged ones
            overrides.insert(0, f"hydra.searchpath=[file://{own.resolve()}]")
        cfg = compose_config(conf, overrides, name="generate", job=False)
        if args.dataset:
            cache = StageCache.from_settings(group_config(cfg, "cache"))  # parsed files, with dataset=files
            loader = instantiate_stage(cfg, "dataset", {"cache": Built(cache, {})}, cache).component
            reading = getattr(loader, "read_documents", None)  # the documents alone: a folder without questions yet
            documents = reading() if reading is not None else loader.load().documents
        else:
            documents = read_documents(args.documents, "--documents")
        report = QuestionSetWriter(cfg, documents).write(args.out)
    except (ConfigError, DatasetError, ValueError, OSError) as error:
        refused = write_refused(error)  # a full or read-only disk: the set was not written, none of it is left
        print(f"ragsweep: error: {cannot_write(refused) if refused else str(error).splitlines()[0]}", file=sys.stderr)
        return 1 if refused else 2
    dropped = ", ".join(f"{reason} {count}" for reason, count in report["dropped"].items() if count) or "none"
    if not report["questions_kept"]:
        print(f"ragsweep: error: no question was kept (dropped: {dropped}), so no dataset was written; "
              f"{args.out / 'generation_report.md'} says which check dropped them", file=sys.stderr)
        return 1
    failed, limit = report["dropped"]["generation_failed"], float(cfg.generator.get("max_error_rate", 0.05))
    if too_many_failed(report, limit):
        print(f"ragsweep: error: {failed} of {report['passages_tried']} drafts failed (more than "
              f"generator.max_error_rate={limit}), so no dataset was written; see {args.out / 'generation_report.md'}, "
              "then rerun: failed calls are not cached, finished drafts are", file=sys.stderr)
        return 1
    print(f"kept {report['questions_kept']} of {report['questions_wanted']} questions wanted from "
          f"{report['passages_tried']} passages (yield {report['yield']:.0%}; dropped: {dropped}); "
          f"{report['seconds']:.0f} s, {report['seconds_per_draft']} s per draft")
    print(f"wrote {args.out / 'queries.jsonl'} and {args.out / 'generation_report.md'}; sweep it: "
          f"ragsweep sweep -m dataset=native dataset.path={args.out}")
    quoted = args.out / "questions.jsonl"
    print(f"or, with its evidence as quotes ({quoted}), on your files with any parser: ragsweep sweep -m "
          f"dataset=files dataset.path=<your folder> dataset.questions={quoted} parser=pdfium,pypdf")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """generate."""
    generate = commands.add_parser("generate", help="write a question set with exact reference spans from your documents")
    source = generate.add_mutually_exclusive_group(required=True)
    source.add_argument("--documents", type=Path, help="folder of UTF-8 .txt files (a document's id: its file name)")
    source.add_argument("--dataset", help="a conf/dataset option whose documents to use, e.g. sotu_qa")
    generate.add_argument("--out", type=Path, required=True, help="folder to write the native dataset and its report to")
    generate.add_argument("--questions-per-document", type=int, help="on average (default: conf/generate.yaml)")
    generate.add_argument("--generator", help="transformers (default, local, nothing compiled), llama_cpp (local, "
                                              "faster: the llama extra, whose install its error gives) or openai (with "
                                              "generator.base_url=...)")
    generate.add_argument("overrides", nargs="*", help="settings of conf/generate.yaml, e.g. judge=trained "
                                                       "filters.round_trip_k=0 generator.base_url=http://...")
    generate.set_defaults(command=generate_command)
