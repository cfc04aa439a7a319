"""Prompt templates: YAML with a `system` and a `user` message; `{passages}` and `{question}` are filled in.

`generator.prompt` names a template shipped here (`qa`, `qa_cite`) or the path of a user's own
YAML file of the same shape. Passages are numbered `[1]`, `[2]`, ... in rank order, so a citing
prompt's `[n]` points at the n-th retrieved chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml

FIELDS = ("passages", "question")


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str
    cites: bool = False  # asks for [n] citations, so citation_accuracy and citation_coverage are scored

    def render(self, question: str, passages: tuple[str, ...]) -> tuple[dict[str, str], ...]:
        numbered = "\n\n".join(f"[{number}] {text}" for number, text in enumerate(passages, start=1))
        user = self.user.replace("{passages}", numbered).replace("{question}", question)
        return ({"role": "system", "content": self.system}, {"role": "user", "content": user})


def shipped(folder: Traversable | None = None) -> list[str]:
    folder = folder or resources.files(__package__).joinpath("prompts")
    return sorted(path.name.removesuffix(".yaml") for path in folder.iterdir() if path.name.endswith(".yaml"))


def read_template(folder: Traversable, name: str, key: str, fields: tuple[str, ...]) -> dict:
    """The YAML template `name` shipped in `folder`, or the file at path `name`, checked: string `system`
    and `user` messages, the user message holding every `{field}`; errors name `key` and the fix."""
    if name in shipped(folder):
        text = folder.joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    elif name.endswith((".yaml", ".yml")) and Path(name).expanduser().is_file():
        text = Path(name).expanduser().read_text(encoding="utf-8")
    else:
        raise ValueError(f"{key}={name} is neither a shipped prompt ({', '.join(shipped(folder))}) "
                         "nor a YAML file with `system` and `user`; pick one of those or give the file's path")
    try:
        template = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{key}={name}: not valid YAML ({error})") from None
    if not isinstance(template, dict) or not all(isinstance(template.get(field), str) for field in ("system", "user")):
        raise ValueError(f"{key}={name}: needs string fields `system` and `user`")
    missing = [field for field in fields if "{" + field + "}" not in template["user"]]
    if missing:
        raise ValueError(f"{key}={name}: the user message must contain "
                         f"{' and '.join('{' + field + '}' for field in missing)}")
    return template


def load_prompt(name: str) -> Prompt:
    """The shipped template `name`, or the YAML file at path `name`; errors name the fix."""
    template = read_template(resources.files(__package__).joinpath("prompts"), name, "generator.prompt", FIELDS)
    if not isinstance(template.get("cites", False), bool):
        raise ValueError(f"generator.prompt={name}: `cites` must be true or false")
    return Prompt(name, template["system"].strip(), template["user"], template.get("cites", False))
