"""What the engine may read on a component beyond its stage's protocol, declared beside the protocol.

Each config group's `base.py` lists, as `OPTIONAL`, the attributes code outside its components (the runner, the
launcher, the API, the commands, a component holding another) reads on them when present, each with its kind and
what it means; a component that has one must give it that kind. tests/test_contracts.py maps every read of a
component's attribute to its group and fails on one that group does not declare, and checks every YAML option's
class against its group's protocol and table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["method", "flag", "count", "number", "modules", "text", "texts", "mapping", "generator", "object"]


@dataclass(frozen=True)
class OptionalAttribute:
    """An attribute a component may have: its kind and what the engine does with it."""

    kind: Kind
    meaning: str

    def accepts(self, value: Any) -> bool:
        """Whether `value` is of this kind (a class attribute, or an instance's)."""
        if self.kind == "method":
            return callable(value)
        if self.kind == "flag":
            return isinstance(value, bool)
        if self.kind == "count":
            return isinstance(value, int) and not isinstance(value, bool)
        if self.kind == "number":
            return value is None or isinstance(value, (int, float)) and not isinstance(value, bool)
        if self.kind == "modules":
            return isinstance(value, tuple) and all(isinstance(name, str) for name in value)
        if self.kind == "texts":
            return isinstance(value, (list, tuple)) and all(isinstance(text, str) for text in value)
        if self.kind == "object":
            return True  # any value: its meaning says what it is
        if self.kind == "mapping":
            return value is None or isinstance(value, dict)
        if self.kind == "generator":
            return callable(getattr(value, "generate", None))
        return value is None or isinstance(value, str)


# What any stage's component may have.
PREFLIGHT = OptionalAttribute("method", "preflight(): load the model or check the service before any work, raising "
                                        "a ValueError, OSError or RuntimeError that the runner turns into one line")
PRELOAD = OptionalAttribute("modules", "libraries its work imports, imported once by a parallel sweep's fork server "
                                       "(runner.workers) when the stage cache is cold")
VERSION = OptionalAttribute("text", "what its numbers come from, as a version (class attribute): raised when a change "
                                    "changes them, so configurations using it get a new fingerprint and a FINISHED "
                                    "run made before runs again, with a warning (`ragsweep.identity.code_versions`)")
MODEL_NAME = OptionalAttribute("text", "the model `prices.models` prices its tokens by (a local file's name without its "
                                       "suffix, an endpoint's model); none: no token price")
REMOTE = OptionalAttribute("flag", "True for an endpoint: its calls are priced by their tokens only, a local model's "
                                   "also by `prices.cpu_second`")
ASKS = OptionalAttribute("generator", "the LLM it asks (a generator built from its own config group), whose "
                                      "`model_name` and `remote` price its calls (`prices`)")
ENABLED = OptionalAttribute("flag", "False on a `none` option's class: the stage does no work and the plan leaves "
                                    "it out")
