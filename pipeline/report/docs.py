"""Docs that cannot drift: every fenced block of README.md and docs/*.md is marked with how
it is kept true, and `tests/unit/test_docs.py` checks each one.

A marker is an HTML comment on the line just above the block's opening fence (invisible on
GitHub): `<!-- doc: KIND [NAME] [key=value ...] -->`. Kinds:

- `exec NAME`: a bash or Python command the tests run, in document order with the file's
  other `exec` blocks, from the repository root; `/tmp/` in it stands for a fresh sandbox.
- `output NAME [select=REGEX]`: what `exec NAME` prints, exactly (with `select`, only the
  lines matching REGEX, a `...` line for each run of skipped lines). A test fails when the
  pasted output no longer matches.
- `command NAME [offline=REGEX]`: a command that needs the full default run's outputs
  (`models/`, `runs/`) or runs an experiment. tests/stages/test_docs_commands.py runs it as
  written on a copy of the tiny reproduction (`doc_tiny.TINY_PROFILE` states the mapping) and fails
  on a non-zero exit; with `offline=REGEX` it needs the network, runs offline and must stop
  with output matching REGEX. `recorded NAME deps=PATH,... stamp=HASH` is its output on the
  default, recorded by `python -m pipeline.report.docs --record` after the default `dvc
  repro`. The stamp hashes the dvc.lock entries of `deps`; a test fails when the committed
  dvc.lock no longer has them (the output then comes from an older default).
- `params [offline=REGEX]`: `dvc exp run` commands (every `-S key=value` is applied to
  params.yaml; the commands also run on the tiny copy as a `command` does) or a params.yaml
  excerpt (merged into it); a test validates the result with `pipeline.params`.
- `tested-by PATH[::TEST]`: a command that a test or CI script runs (`dvc repro` of the tiny
  profile, `bash scripts/test.sh`); the test checks that it exists.
- `template`: a code template with `<placeholders>` to fill in (docs/adding-a-method.md),
  neither a command nor an output; the test checks that it has a placeholder, so that no
  runnable block hides as one.
- `file PATH`: a whole file a guide tells the reader to create at PATH (a worked plug-in in
  docs/adding-a-method.md); `tests/stages/test_guide.py` writes it into a copy of the
  repository and runs the guide's commands on it.

Numbers in prose about runs, sizes, counts and times are marked values,
`<!-- value NAME -->…<!-- /value -->`, generated from their sources (pipeline/report/
doc_values.py); an unmarked one fails the docs test unless `NOT_RESULTS`
(pipeline/report/doc_numbers.py) says why it stays.

`python -m pipeline.report.docs --write` regenerates every marked value, reruns every `exec`
block and rewrites the `output` blocks and the README's results table; `--record` also
reruns the `command` blocks (the lead, after the final `dvc repro`; it needs a clean `git
status` of params.yaml, dvc.lock, metrics/ and dvclive/, and restores them and the DVC
outputs afterwards).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline import io
from pipeline.errors import InputError

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("exec", "output", "command", "recorded", "params", "tested-by", "template", "file")
_MARKER = re.compile(r"^<!-- doc: ([a-z-]+)((?: \S+)*) -->$")
_FENCE = re.compile(r"^\s*(`{3,})([\w+-]*)\s*$")
PLACEHOLDER = re.compile(r"<[\w …-]+>")
ELLIPSIS = "..."


class DocError(InputError):
    """A docs block is unmarked, mismarked or out of date."""


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced block: where it is, its text and its marker (kind None: unmarked)."""

    path: Path
    start: int  # 0-based index of the opening fence line
    end: int  # 0-based index of the closing fence line
    lang: str
    text: str
    kind: str | None
    name: str | None
    options: Mapping[str, str]

    @property
    def where(self) -> str:
        rel = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{rel}:{self.start + 1}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and docs/*.md: the files whose blocks must be marked."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def value_files(root: Path = ROOT) -> list[Path]:
    """The files whose marked values `--write` regenerates (pipeline/report/doc_values.py):
    the docs and benchmarks/README.md."""
    return [*doc_files(root), root / "benchmarks" / "README.md"]


def write_values(root: Path = ROOT) -> None:
    """Recompute every marked value of `value_files`."""
    from pipeline.report.doc_values import rewrite

    for path in value_files(root):
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, root)
        if new != text:
            io.write_text(new, path)
            log.info("%s: values regenerated", path)


def _marker(line: str, where: str) -> tuple[str, str | None, dict[str, str]]:
    m = _MARKER.match(line.strip())
    if not m:
        raise DocError(f"{where}: malformed docs marker {line.strip()!r}")
    kind, rest = m.group(1), m.group(2).split()
    if kind not in KINDS:
        raise DocError(f"{where}: unknown docs marker kind {kind!r}; one of {', '.join(KINDS)}")
    name = rest[0] if rest and "=" not in rest[0] else None
    opts = dict(x.split("=", 1) for x in rest[1 if name else 0 :] if "=" in x)
    if kind == "tested-by" and name is None:
        raise DocError(f"{where}: `tested-by` needs PATH[::TEST]")
    return kind, name, opts


def parse(path: Path, text: str | None = None) -> list[Block]:
    """Every fenced block of a Markdown file with the marker on the line above it."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(1)
        close = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        if close is None:
            raise DocError(f"{path}:{i + 1}: code block without a closing {fence}")
        kind = name = None
        opts: dict[str, str] = {}
        if i > 0 and lines[i - 1].strip().startswith("<!-- doc:"):
            kind, name, opts = _marker(lines[i - 1], f"{path}:{i}")
        body = "\n".join(lines[i + 1 : close])
        out.append(Block(path, i, close, m.group(2), body, kind, name, opts))
        i = close + 1
    return out


def replace(text: str, block: Block, body: str) -> str:
    """`text` with the content of `block` (parsed from `text`) replaced by `body`."""
    lines = text.split("\n")
    body_lines = body.rstrip("\n").split("\n")
    return "\n".join([*lines[: block.start + 1], *body_lines, *lines[block.end :]])


# --- exec / output -------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0")
    env.setdefault("COLUMNS", "200")
    return env


def execute(
    block: Block, sandbox: Path | None, root: Path = ROOT, timeout: int = 900,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run a bash or Python block as written, from `root` (`/tmp/` standing for `sandbox`),
    with the virtual environment first on PATH and `env` added; whatever its exit status."""
    text = block.text if sandbox is None else block.text.replace("/tmp/", f"{sandbox}/")
    if block.lang == "python":
        cmd = [sys.executable, "-"]
    elif block.lang in ("bash", "sh", ""):
        cmd = ["bash", "-euo", "pipefail", "-s"]
    else:
        raise DocError(f"{block.where}: cannot run a {block.lang!r} block")
    return subprocess.run(
        cmd, input=text, cwd=root, env={**_env(), **(env or {})}, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip


def run_block(block: Block, sandbox: Path | None, root: Path = ROOT, timeout: int = 900) -> str:
    """Run a bash or Python block from `root`; its stdout with the sandbox shown as /tmp/."""
    proc = execute(block, sandbox, root, timeout)
    if proc.returncode != 0:
        raise DocError(
            f"{block.where}: the {block.kind} block {block.name!r} failed "
            f"(exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    out = proc.stdout if sandbox is None else proc.stdout.replace(f"{sandbox}/", "/tmp/")
    return out


def _head_name(root: Path) -> str:
    """What `dvc exp show` calls HEAD: its branch, or its short commit when detached."""
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        return proc.stdout.strip()

    name = git("rev-parse", "--abbrev-ref", "HEAD")
    return git("rev-parse", "--short", "HEAD") if name in ("", "HEAD") else name


def as_head(stdout: str, head: str, shown_as: str) -> str:
    """`dvc exp show`'s Markdown row of the checkout's HEAD named `shown_as` (e.g. `main`, so
    that a branch or a detached CI checkout prints what the docs show), widths kept."""

    def cell(m: re.Match[str]) -> str:
        return "| " + shown_as + " " * max(1, len(m.group(1)) + len(head) - len(shown_as)) + "|"

    return re.sub(rf"^\| {re.escape(head)}( +)\|", cell, stdout, flags=re.MULTILINE)


def printed(stdout: str, options: Mapping[str, str], root: Path = ROOT) -> str:
    """What an output block must show of `stdout`, its marker's options applied."""
    if "head-as" in options:
        stdout = as_head(stdout, _head_name(root), options["head-as"])
    return shown(stdout, options.get("select"))


def shown(stdout: str, select: str | None = None) -> str:
    """What an output block shows of `stdout`: trailing spaces and blank lines dropped; with
    `select`, the matching lines only and one `...` line per run of skipped lines."""
    lines = [x.rstrip() for x in stdout.rstrip().split("\n")]
    if not select:
        return "\n".join(lines)
    pattern = re.compile(select)
    out: list[str] = []
    for line in lines:
        if pattern.search(line):
            out.append(line)
        elif not out or out[-1] != ELLIPSIS:
            out.append(ELLIPSIS)
    return "\n".join(out)


@contextlib.contextmanager
def sandbox() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="docs-") as tmp:
        yield Path(tmp)


def exec_outputs(path: Path, root: Path = ROOT) -> dict[str, str]:
    """Run the `exec` blocks of one file in order in one sandbox → name → stdout."""
    out: dict[str, str] = {}
    with sandbox() as box:
        for block in parse(path):
            if block.kind == "exec":
                assert block.name, f"{block.where}: `exec` needs a NAME"
                out[block.name] = run_block(block, box, root)
    return out


def output_mismatches(path: Path, outputs: Mapping[str, str]) -> list[str]:
    """One message per `output` block of `path` that differs from what its command printed."""
    problems = []
    for block in parse(path):
        if block.kind != "output":
            continue
        if block.name is None or block.name not in outputs:
            problems.append(f"{block.where}: output {block.name!r} has no `exec` block")
            continue
        want = printed(outputs[block.name], block.options)
        if block.text.rstrip() != want:
            problems.append(
                f"{block.where}: output {block.name!r} differs from what the command prints "
                f"now; run `python -m pipeline.report.docs --write`.\n--- pasted\n"
                f"{block.text.rstrip()}\n--- printed\n{want}"
            )
    return problems


# --- recorded outputs ---------------------------------------------------------------------


def stamp(deps: Sequence[str], lock_path: Path = ROOT / "dvc.lock") -> str:
    """Hash of the dvc.lock md5s of `deps` (outputs of the default run)."""
    from pipeline.provenance import lock_hashes

    hashes = lock_hashes(lock_path)
    missing = [d for d in deps if d not in hashes]
    if missing:
        raise DocError(f"{lock_path}: no output {missing} (a `recorded` block depends on it)")
    text = "".join(f"{d} {hashes[d]}\n" for d in deps)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _stamp_or_problem(deps: Sequence[str], lock_path: Path, block: Block) -> tuple[str, str]:
    """`(stamp, "")`, or `("", problem)` when dvc.lock lacks a dep."""
    try:
        return stamp(deps, lock_path), ""
    except DocError as e:
        return "", f"{block.where}: recorded {block.name!r}: {e}; run `dvc repro` first"


def stale_recordings(path: Path, lock_path: Path = ROOT / "dvc.lock") -> list[str]:
    """One message per `recorded` block whose stamp does not match the committed dvc.lock."""
    problems = []
    commands = {b.name for b in parse(path) if b.kind == "command"}
    for block in parse(path):
        if block.kind != "recorded":
            continue
        deps = [d for d in block.options.get("deps", "").split(",") if d]
        if block.name not in commands:
            problems.append(f"{block.where}: recorded {block.name!r} has no `command` block")
            continue
        if not deps:
            problems.append(f"{block.where}: recorded {block.name!r} names no deps=")
            continue
        current, problem = _stamp_or_problem(deps, lock_path, block)
        if problem:
            problems.append(problem)
        elif block.options.get("stamp") != current:
            problems.append(
                f"{block.where}: recorded {block.name!r} comes from other outputs than the "
                f"committed dvc.lock has ({', '.join(deps)}); after `dvc repro`, run "
                "`python -m pipeline.report.docs --record`."
            )
    return problems


def _marker_line(block: Block, options: Mapping[str, str]) -> str:
    opts = " ".join(f"{k}={v}" for k, v in options.items())
    return f"<!-- doc: {block.kind} {block.name}{' ' + opts if opts else ''} -->"


RESTORED = ("params.yaml", "dvc.lock", "metrics", "dvclive", "plots")
"""What a recorded command changes in git's files (an experiment's training logs and the
report's figures included: a recorded experiment reruns the report)."""


def _clean_workspace(root: Path) -> None:
    proc = subprocess.run(
        ["git", "status", "--porcelain", "--", *RESTORED], cwd=root, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    if proc.stdout.strip():
        raise DocError(
            f"--record runs experiments and restores {', '.join(RESTORED)} from git afterwards; "
            f"commit or stash their changes first:\n{proc.stdout}"
        )


def _restore_workspace(root: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z", "--", *RESTORED], cwd=root,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    subprocess.run(["git", "checkout", "--", *filter(None, tracked.split("\0"))], cwd=root,
                   check=True)  # fmt: skip
    subprocess.run(["dvc", "checkout", "--force", "--quiet"], cwd=root, env=_env(), check=False)


def _remove_named_experiments(block: Block, root: Path) -> None:
    """`dvc exp remove` the experiments a command names (`-n NAME`), so it can run again."""
    names = re.findall(r"(?:-n|--name)[ =](\S+)", block.text)
    if names:
        subprocess.run(["dvc", "exp", "remove", *names], cwd=root, env=_env(),
                       capture_output=True, check=False)  # fmt: skip


# --- params ---------------------------------------------------------------------------------


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v


def params_problems(block: Block, root: Path = ROOT) -> list[str]:
    """Apply the block's `-S` overrides as `dvc exp run` does (DVC's Hydra parser), or merge
    its YAML, into a copy of params.yaml and validate it with `pipeline.params`."""
    from dvc.utils.hydra import apply_overrides

    from pipeline.params import load_params

    base = (root / "params.yaml").read_text(encoding="utf-8")
    variants: list[tuple[dict[str, Any] | None, list[str]]] = []
    if block.lang == "yaml":
        tree: dict[str, Any] = yaml.safe_load(base)
        _merge(tree, yaml.safe_load(block.text))
        variants.append((tree, []))
    for line in block.text.replace("\\\n", " ").split("\n"):
        words = shlex.split(line, comments=True) if block.lang != "yaml" else []
        if words[:3] != ["dvc", "exp", "run"]:
            continue
        sets = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-S", "--set-param")]
        # a sweep `k=a,b,c` (queued as one experiment per value) is checked at its first value
        firsts = [s if "=[" in s else s.split(",")[0] for s in sets]
        variants.append((None, firsts))
    if not variants:
        return [f"{block.where}: `params` block without `dvc exp run` or YAML"]
    problems = []
    with sandbox() as box:
        for i, (merged, overrides) in enumerate(variants):
            path = box / f"params-{i}.yaml"
            path.write_text(base if merged is None else yaml.safe_dump(merged), encoding="utf-8")
            try:
                if overrides:
                    apply_overrides(str(path), overrides)
                load_params(str(path))
            except Exception as e:  # any validation failure is the finding
                cause = f" ({e.__cause__})" if e.__cause__ else ""
                problems.append(f"{block.where}: params of this block are invalid: {e}{cause}")
    return problems


# --- every block ----------------------------------------------------------------------------


def unmarked(paths: Sequence[Path]) -> list[str]:
    """Blocks without a marker, and markers with a missing name."""
    problems = []
    for path in paths:
        for b in parse(path):
            if b.kind is None:
                problems.append(
                    f"{b.where}: fenced block without a `<!-- doc: KIND ... -->` marker "
                    f"(one of {', '.join(KINDS)}; pipeline/report/docs.py)"
                )
            elif b.kind in ("exec", "output", "command", "recorded", "file") and not b.name:
                problems.append(f"{b.where}: `{b.kind}` marker needs a NAME")
            elif b.kind == "template" and not PLACEHOLDER.search(b.text):
                problems.append(f"{b.where}: a `template` without a <placeholder>; mark it as "
                                "what it is (exec, params, ...)")  # fmt: skip
    return problems


def tested_by_problems(block: Block, root: Path = ROOT) -> list[str]:
    path, _, test = (block.name or "").partition("::")
    target = root / path
    if not target.is_file():
        return [f"{block.where}: tested-by {path}: no such file"]
    if test and not re.search(rf"^\s*def {re.escape(test)}\(", target.read_text(), re.MULTILINE):
        return [f"{block.where}: tested-by {path}: no test `{test}`"]
    return []


def write(paths: Sequence[Path], record: bool = False, root: Path = ROOT) -> None:
    """Rewrite the `output` blocks (and with `record` the `recorded` ones) in place."""
    from pipeline.report.readme import embed, embed_controls

    if record:
        _clean_workspace(root)
    readme = root / "README.md"
    decisions = root / "docs" / "decisions.md"
    summary = root / "metrics" / "summary.md"
    if readme in paths and summary.is_file():
        io.write_text(embed(readme.read_text(encoding="utf-8"), summary.read_text()), readme)
    if decisions in paths and summary.is_file():
        text = embed_controls(decisions.read_text(encoding="utf-8"), summary.read_text())
        io.write_text(text, decisions)
    for path in paths:
        outputs = exec_outputs(path, root)
        recorded: dict[str, str] = {}
        if record:
            for b in parse(path):
                if b.kind != "command":
                    continue
                log.info("%s: running %s", b.where, b.name)
                _remove_named_experiments(b, root)
                try:
                    recorded[b.name or ""] = run_block(b, None, root, timeout=3600)
                finally:
                    _restore_workspace(root)  # each command starts from the committed run
        text = path.read_text(encoding="utf-8")
        for b in reversed(parse(path, text)):
            if b.kind == "output" and b.name in outputs:
                text = replace(text, b, printed(outputs[b.name], b.options, root))
            elif b.kind == "recorded" and b.name in recorded:
                text = replace(text, b, printed(recorded[b.name], b.options, root))
                deps = [d for d in b.options.get("deps", "").split(",") if d]
                options = {**b.options, "stamp": stamp(deps, root / "dvc.lock")}
                lines = text.split("\n")
                lines[b.start - 1] = _marker_line(b, options)
                text = "\n".join(lines)
        io.write_text(text, path)
        log.info("%s: %d outputs, %d recorded", path, len(outputs), len(recorded))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the output blocks")
    ap.add_argument("--record", action="store_true", help="also rerun the `command` blocks")
    ap.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    paths = [p.resolve() for p in ns.files] or doc_files()
    if ns.write or ns.record:
        write_values()
        write(paths, record=ns.record)
        return
    from pipeline.report.doc_numbers import NOT_RESULTS, unmarked_numbers
    from pipeline.report.doc_values import value_problems

    problems = unmarked(paths)
    for path in value_files():
        problems += value_problems(path)
    for path in paths:
        problems += output_mismatches(path, exec_outputs(path)) + stale_recordings(path)
        problems += unmarked_numbers(path, NOT_RESULTS)
    for p in problems:
        log.error("%s", p)
    raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
