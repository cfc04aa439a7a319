"""The `ragsweep` command line itself: every command's help, and servers that cannot start say so at once."""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.cli import _parser, main


def _commands() -> list[str]:
    actions = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def test_the_command_list_is_read_from_the_parser():
    assert {"best", "report", "gate", "ui", "calibrate", "generate"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
def test_every_command_prints_its_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: ragsweep {command}" in capsys.readouterr().out


def test_the_top_level_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert all(f"\n    {command} " in shown for command in _commands())


def test_project_and_tracking_uri_are_taken_before_or_after_the_command():
    before = _parser().parse_args(["--project", "p", "--tracking-uri", "sqlite:///a.db", "best"])
    after = _parser().parse_args(["best", "--project", "p", "--tracking-uri", "sqlite:///a.db"])
    assert (before.project, before.tracking_uri) == (after.project, after.tracking_uri) == (Path("p"), "sqlite:///a.db")
    plain = _parser().parse_args(["best"])
    assert (plain.project, plain.tracking_uri, plain.tracking) == (Path("."), None, "mlflow")
    assert _parser().parse_args(["best", "--tracking", "mine"]).tracking == "mine"


def test_a_tracking_option_conf_does_not_have_is_refused_in_one_line_naming_the_options(tmp_path, capsys):
    (tmp_path / "mlruns").mkdir()
    (tmp_path / "mlruns" / "mlflow.db").touch()
    assert main(["--project", str(tmp_path), "best", "--tracking", "nosuch"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "ragsweep: error: --tracking nosuch: there is no conf/tracking/nosuch.yaml; choose one of mlflow"]


@pytest.mark.parametrize("command", ["ui", "server"])
def test_a_server_on_a_port_in_use_is_refused_at_once(command, tmp_path):
    (tmp_path / "mlruns").mkdir()
    (tmp_path / "mlruns" / "mlflow.db").touch()
    extra = ["--backend-store-uri", "postgresql://u:p@127.0.0.1:5432/db", "--artifacts-destination",
             str(tmp_path / "artifacts")] if command == "server" else []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "ragsweep.cli", "--project", str(tmp_path), command,
                               "--port", str(port), *extra], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"ragsweep: error: port {port} is in use"
                                                + (" on 127.0.0.1" if command == "server" else "") + "; pass --port"]


def test_init_writes_a_project_and_refuses_to_overwrite_one(tmp_path, capsys):
    assert main(["init", str(tmp_path / "rag")]) == 0
    written = {path.relative_to(tmp_path / "rag").as_posix(): path.read_bytes() if path.is_file() else None
               for path in sorted((tmp_path / "rag").rglob("*"))}
    assert {"conf/config.yaml", "conf/dataset/my_data.yaml", "sweeps/my_grid.yaml", ".gitignore"} <= set(written)
    assert (tmp_path / "rag" / "conf" / "sweep" / "my_grid.yaml").is_file()  # named grids: +sweep=my_grid
    assert "- ragsweep" in (tmp_path / "rag" / "conf" / "config.yaml").read_text()
    assert "pkg://ragsweep.conf" in (tmp_path / "rag" / "conf" / "config.yaml").read_text()
    capsys.readouterr()
    assert main(["init", str(tmp_path / "rag")]) == 2
    assert capsys.readouterr().err.strip() == (f"ragsweep: error: {tmp_path / 'rag' / 'conf' / 'config.yaml'} exists; "
                                               "ragsweep init writes a new project: give an empty folder")
    assert {path.relative_to(tmp_path / "rag").as_posix(): path.read_bytes() if path.is_file() else None
            for path in sorted((tmp_path / "rag").rglob("*"))} == written
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["init", str(tmp_path / "notes.txt")]) == 2
    assert capsys.readouterr().err.strip() == (f"ragsweep: error: {tmp_path / 'notes.txt'} is a file; ragsweep init "
                                               "writes a project folder: give a new or empty folder's path")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_project_from_init_calibrates_a_packaged_judge(tmp_path, monkeypatch, capsys):
    project = tmp_path / "rag"
    assert main(["init", str(project)]) == 0
    monkeypatch.chdir(project)
    capsys.readouterr()
    assert main(["calibrate", "--judge", "lexical", "--limit", "6", "--heldout", "none"]) == 0, capsys.readouterr().err
    assert json.loads((project / "calibration" / "lexical.json").read_text())["n"] == 6
