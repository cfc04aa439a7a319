"""Output held to a JSON schema for `generator=transformers`, through llguidance (one binary wheel, no compiler).

At each decoding step llguidance says which tokens can continue a text the schema accepts; every other token's
score becomes -inf before transformers picks one, so the answer is JSON of that schema (unless `max_tokens` cuts
it short), as llama.cpp's grammar makes it for `generator=llama_cpp`. Once the JSON is complete only the end of
the answer is allowed. llguidance reads the tokenizer itself, so it keeps up with transformers and torch.
"""

from __future__ import annotations

import json
from typing import Any

import llguidance
import llguidance.hf
import numpy as np
import torch
from transformers import LogitsProcessor

_TOKENIZERS: dict[int, Any] = {}  # llguidance's view of each loaded tokenizer, by id (made once: about 0.5 s)
_GRAMMARS: dict[str, str] = {}  # each schema's grammar, by the schema's JSON


def json_schema(response_format: dict) -> dict | None:
    """The schema a response_format asks for: llama.cpp's `{"type": "json_object", "schema": ...}`, OpenAI's
    `{"type": "json_schema", "json_schema": {"schema": ...}}`, any JSON object for a bare json_object; None (free
    text) for `{"type": "text"}`."""
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return response_format.get("schema") or {"type": "object"}
    if kind == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema") or {"type": "object"}
    raise ValueError(f"generator=transformers constrains output to JSON only (response_format type json_object, "
                     f"json_schema or text), got type {kind!r}")


class JsonConstraint(LogitsProcessor):
    """Masks every token that cannot continue JSON of `schema`, for one answer (a batch of one) to a prompt of
    `prompt_length` tokens; `error` says why the constraint was dropped (None while it holds)."""

    def __init__(self, tokenizer: Any, schema: dict, prompt_length: int) -> None:
        key = json.dumps(schema, sort_keys=True)
        if key not in _GRAMMARS:
            _GRAMMARS[key] = llguidance.LLMatcher.grammar_from_json_schema(schema)
        if id(tokenizer) not in _TOKENIZERS:
            _TOKENIZERS[id(tokenizer)] = llguidance.hf.from_tokenizer(tokenizer)
        self.matcher = llguidance.LLMatcher(_TOKENIZERS[id(tokenizer)], _GRAMMARS[key], log_level=0)
        if self.matcher.is_error():
            raise ValueError(f"llguidance cannot constrain output to this JSON schema: {self.matcher.get_error()}")
        self.consumed, self.error = prompt_length, None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        new = input_ids[0, self.consumed:].tolist()
        self.consumed = input_ids.shape[1]
        if self.error is not None or (new and not self.matcher.consume_tokens(new)):
            self.error = self.error or f"llguidance lost the JSON schema: {self.matcher.get_error()}"
            return scores  # never reached while each token is picked from the mask; then the parser judges it
        bits = np.unpackbits(np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
        allowed = np.zeros(scores.shape[-1], dtype=bool)
        allowed[: min(len(bits), len(allowed))] = bits[: len(allowed)].astype(bool)
        return scores.masked_fill(~torch.from_numpy(allowed), float("-inf"))
