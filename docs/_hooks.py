"""mkdocs hooks (mkdocs.yml `hooks:`): the pages that are generated from the code at build time.

Five markers in a page's Markdown are replaced before it renders, so these parts can never go stale:

- `<!-- ragsweep:cli -->`: the command-line reference, walked from the argparse parser that
  `ragsweep.cli._parser()` builds (every subcommand, its usage and its arguments with their help).
- `<!-- ragsweep:conf GROUP -->`: every option of the config group `conf/GROUP/`, each YAML file shown
  whole, comments included (the comments document the keys).
- `<!-- ragsweep:bad-input -->`: the table of refused inputs, read from `tests/test_bad_input.py`'s `CASES`
  (each row there is a test: the command, and the start of the one line it must print).
- `<!-- ragsweep:runs FILE -->`: a benchmark's run log, the CSV file (relative to docs/) its script appends a
  row to with `--log`, as a table with one column per run and the ratios its targets are stated in.
- `::: ragsweep.NAME` (a mkdocstrings block naming a public name of the package, such as
  `ragsweep.Evaluation`): rewritten to the module that defines it, read from `ragsweep._EXPORTS` (the
  package imports these lazily, so they cannot be found statically), so the API pages follow a class
  that moves.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
_CONF_MARKER = re.compile(r"^<!-- ragsweep:conf (?P<group>[\w]+) -->$", re.M)
_CLI_MARKER = "<!-- ragsweep:cli -->"
_BAD_INPUT_MARKER = "<!-- ragsweep:bad-input -->"
_RUNS_MARKER = re.compile(r"^<!-- ragsweep:runs (?P<file>[\w./-]+) -->$", re.M)
_EXPORT = re.compile(r"^::: ragsweep\.(?P<name>[A-Za-z_]+)[ \t]*$", re.M)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if _CLI_MARKER in markdown:
        markdown = markdown.replace(_CLI_MARKER, cli_reference())
    if _BAD_INPUT_MARKER in markdown:
        markdown = markdown.replace(_BAD_INPUT_MARKER, bad_input_table())
    markdown = _CONF_MARKER.sub(lambda match: conf_options(match["group"]), markdown)
    markdown = _RUNS_MARKER.sub(lambda match: runs_table(ROOT / "docs" / match["file"]), markdown)
    return _EXPORT.sub(_public_name, markdown)


def _public_name(match: re.Match) -> str:
    import ragsweep

    name = match["name"]
    if name not in ragsweep._EXPORTS:  # a module (ragsweep.types): mkdocstrings finds it as it is
        return match[0]
    return f"::: {ragsweep._EXPORTS[name]}.{name}\n    options:\n      heading: ragsweep.{name}"


# ---- the command-line reference ---------------------------------------------------------------------------

def cli_reference() -> str:
    from ragsweep.cli import _parser

    parser = _parser()
    lines = [_usage(parser), "", _arguments_table(parser), ""]
    for name, sub in _subcommands(parser):
        lines += [f"## ragsweep {name}", ""]
        summary = _help_of(parser, name)
        if summary:
            lines += [_sentence(summary), ""]
        if sub.description and sub.description != summary:
            lines += [_escape(sub.description), ""]
        lines += [_usage(sub), ""]
        table = _arguments_table(sub)
        if table:
            lines += [table, ""]
    return "\n".join(lines)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _usage(parser: argparse.ArgumentParser) -> str:
    usage = " ".join(parser.format_usage().removeprefix("usage:").split())
    return f"```text\n{usage}\n```"


def _arguments_table(parser: argparse.ArgumentParser) -> str:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        name = ", ".join(f"`{option}`" for option in action.option_strings) if action.option_strings \
            else f"`{action.metavar or action.dest}`"
        if action.option_strings and action.nargs != 0:
            name += f" `{formatter._format_args(action, action.dest.upper())}`"
        text = formatter._expand_help(action) if action.help else ""
        notes = []
        if action.required and action.option_strings:
            notes.append("required")
        if action.nargs in ("*", "?") and not action.option_strings:
            notes.append("optional")
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.nargs != "*"
        if shown and "default" not in text:
            notes.append(f"default: `{action.default}`")
        group = _exclusive_group(parser, action)
        if group:
            notes.append(f"or {group}")
        if notes:
            text = f"{text} ({'; '.join(notes)})" if text else "; ".join(notes)
        rows.append(f"| {name} | {_escape(text)} |")
    if not rows:
        return ""
    return "\n".join(["| argument | meaning |", "|---|---|", *rows])


def _exclusive_group(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    for group in parser._mutually_exclusive_groups:
        if action in group._group_actions:
            others = [f"`{other.option_strings[0]}`" for other in group._group_actions if other is not action]
            return ("one of " if group.required else "not with ") + ", ".join(others) if others else ""
    return ""


def _sentence(text: str) -> str:
    text = _escape(text.strip())
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _escape(text: str) -> str:
    """Help text as Markdown table text: pipes escaped; angle brackets as entities outside `code`."""
    parts = text.replace("|", "\\|").split("`")
    parts[::2] = [part.replace("<", "&lt;").replace(">", "&gt;") for part in parts[::2]]
    return "`".join(parts)


# ---- the table of refused inputs -------------------------------------------------------------------------

def bad_input_table(path: Path = ROOT / "tests" / "test_bad_input.py") -> str:
    """One row per `CASES` entry: its name, the `python sweep.py` arguments (a row that first makes a file or
    dataset in the project folder says so) and the text its one error line must contain. Read with `ast`, so
    the docs build needs neither pytest nor the test's helpers."""
    module = ast.parse(path.read_text())
    lists = {node.targets[0].id: node.value for node in module.body if isinstance(node, ast.Assign)
             and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.List)}
    cases = next(node.value for node in module.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", None) == "CASES")
    rows = ["| case | `python sweep.py` ... | the error line contains |", "|---|---|---|"]
    for key, call in zip(cases.keys, cases.values, strict=True):
        arguments, message = call.args[0], ast.literal_eval(call.args[1])
        rows.append(f"| {key.value} | {_escape('`' + _arguments(arguments, lists) + '`')} | "
                    f"{_escape('`' + message + '`')} |")
    return "\n".join(rows)


def _arguments(node: ast.expr, lists: dict[str, ast.List]) -> str:
    """A case's arguments as typed; `<file>` where the test makes one first."""
    if isinstance(node, ast.Lambda):
        return " ".join(_argument(part, lists) for part in _lambda_parts(node.body))
    if isinstance(node, ast.List):
        return " ".join(_argument(part, lists) for part in node.elts)
    return _argument(node, lists)


def _lambda_parts(body: ast.expr) -> list[ast.expr]:
    if isinstance(body, ast.List):
        return body.elts
    if isinstance(body, ast.Lambda):
        return _lambda_parts(body.body)
    return [ast.Constant("dataset=native"), ast.Constant("dataset.path=<a dataset the test makes>")]


def _argument(node: ast.expr, lists: dict[str, ast.List]) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.Starred) and isinstance(node.value, ast.Name):
        return " ".join(_argument(part, lists) for part in lists[node.value.id].elts)
    if isinstance(node, ast.JoinedStr):  # f"cache.dir={folder}/ro/cache"
        return "".join(str(part.value) if isinstance(part, ast.Constant) else "<folder>" if
                       isinstance(part.value, ast.Name) else "<file>" for part in node.values)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_native_args":  # makes a dataset
        return "dataset=native dataset.path=<a dataset the test makes>"
    return "<a folder the test makes>"


# ---- the options of a config group ------------------------------------------------------------------------

def conf_options(group: str) -> str:
    """Every option of `conf/GROUP/`, the default first (from `conf/ragsweep.yaml`'s defaults list)."""
    folder = CONF / group
    if not folder.is_dir():
        raise ValueError(f"<!-- ragsweep:conf {group} -->: no config group conf/{group}/")
    default = _defaults().get(group)
    options = sorted(folder.glob("*.yaml"), key=lambda path: (path.stem != default, path.stem))
    if not options:
        raise ValueError(f"<!-- ragsweep:conf {group} -->: conf/{group}/ holds no option")
    lines = []
    for path in options:
        choose = f"+{group}" if group == "sweep" else group  # a named grid has no default: it is added
        heading = f"### `{choose}={path.stem}`" + (" (default)" if path.stem == default else "")
        lines += [heading, "", f"`conf/{group}/{path.name}`:", "",
                  "```yaml", path.read_text(encoding="utf-8").rstrip(), "```", ""]
    return "\n".join(lines)


def _defaults() -> dict[str, str]:
    """Each group's default option, from the defaults list of ragsweep's primary config."""
    import yaml

    entries = yaml.safe_load((CONF / "ragsweep.yaml").read_text(encoding="utf-8")).get("defaults", [])
    return {group: str(option) for entry in entries if isinstance(entry, dict)
            for group, option in entry.items()}


# ---- a benchmark's run log ----------------------------------------------------------------------------------

def runs_table(path: Path) -> str:
    """A benchmark's run log (a CSV file the script appends its figures to with `--log`) as a table with one column
    per run; the targets in the row names."""
    import csv

    with path.open(newline="", encoding="utf-8") as file:
        runs = list(csv.DictReader(file))
    rows = {"date": "date", "commit": "commit", "lower bound (s)": "lower_bound_s", "cold grid (s)": "cold_s",
            "warm grid (s)": "warm_s", "**cold / lower bound** (≤ 1.15)": "cold_over_lower_bound",
            "**warm / cold** (≤ 0.05)": "warm_over_cold",
            "warm grid a configuration (s) (≤ 0.1)": "warm_s_per_config",
            "warm a configuration / lower bound (× 1,000)": "warm_config_over_bound_x1000",
            "**peak RSS (GB)** (≤ 1.3)": "peak_rss_gb"}
    lines = ["| | " + " | ".join(f"run {run['run']}" for run in runs) + " |", "|---|" + "---|" * len(runs)]
    lines += [f"| {name} | " + " | ".join(run[key] for run in runs) + " |" for name, key in rows.items()]
    notes = [f"run {run['run']}: {run['conditions']}" for run in runs if run["conditions"]]
    return "\n".join(lines) + ("\n\n" + "; ".join(notes) + "." if notes else "") + "\n"
