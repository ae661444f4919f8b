"""Provenance of a run: the ir_metadata block (Breuer et al., SIGIR 2022, "ir_metadata: an
extensible metadata schema for IR experiments"; www.ir-metadata.org, schema version 0.1)
of every TREC run the pipeline writes, in a YAML file beside the run
(`runs/<method>/run.trec.ir_metadata.yaml`, `pipeline.io.write_trec_run(metadata=...)`), so
that the run itself stays a plain six-column file every TREC tool reads.

The PRIMAD components, filled from params.yaml and dvc.lock:

- **platform**: the software libraries and their versions, the retrieval toolkit, the locked
  environment (`requirements.lock`'s sha256 and any installed package that differs from
  it), the device requested by params (`train.device`);
- **implementation**: the command, the language and the code the stage ran: its code digest
  (`data/code/<stage>.txt`, written by the `params` stage: every project file the stage
  imports with its MD5; pipeline/deps) and that file's MD5;
- **method**: automatic, how score ties are ordered, the BM25 first stage (params
  `candidates`) and the reranker it feeds (model, method settings, seed; the model's DVC
  hash from dvc.lock);
- **actor**: only when given;
- **data**: the dataset (`dataset.name`, its ir_datasets id where there is one) and the DVC
  hashes of the data the run was made from (corpus, queries, candidates), from dvc.lock.

**Decision**: the block holds nothing that differs between two machines or two checkouts
of the same code and inputs: no CPU model, kernel, host, date, commit id, git tree hash or
remote URL. A commit id changes with the commit's time and author even when the code is the
same, and a tree hash of `pipeline/` changes with any file in it, also one the stage never
runs (issue 41: a run written at HEAD differed from the one dvc.lock recorded although
nothing it depends on had changed, so `dvc pull` of a colleague's runs failed); the remote
URL differs between clones. The code is named by the stage's own code digest instead, which
is a dependency of the stage in dvc.yaml: the run changes exactly when the stage reruns.
`build_metadata(..., commit=True)` adds the repository, commit and a `dirty` flag for uses
outside DVC. Hashes come from the dvc.lock entries of
the stages that produced each input (written before a downstream stage runs in `dvc repro`);
an entry that is absent is left out.
"""

from __future__ import annotations

import hashlib
import logging
import platform
import re
import subprocess
from collections.abc import Mapping
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import yaml

from pipeline import paths
from pipeline.data import get_source
from pipeline.errors import InputError
from pipeline.io import metadata_path
from pipeline.params import Params

log = logging.getLogger(__name__)

SCHEMA_VERSION = 0.1
LIBRARIES = ("pipeline", "torch", "transformers", "polars", "numpy", "pyarrow", "scipy")
LOCK_FILE = "requirements.lock"  # scripts/setup.sh installs it; docs/dependencies.md
TOOLKITS = ("bm25s",)
DATA_OUTS = tuple(p.as_posix() for p in (paths.CORPUS, paths.QUERIES, paths.CANDIDATES))
CODE = ("pipeline", "stages")


def _version(package: str) -> str:
    try:
        return f"{package}=={importlib_metadata.version(package)}"
    except importlib_metadata.PackageNotFoundError:
        return package


def environment(root: str | Path = ".") -> dict[str, Any]:
    """The locked Python environment: the lock file's sha256 and every installed package
    whose version differs from its pin (none after `scripts/setup.sh`; torch is not locked,
    its version is in `libraries`). Empty without a lock file."""
    p = Path(root) / LOCK_FILE
    if not p.is_file():
        return {}
    data = p.read_bytes()
    pins = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", data.decode(), re.MULTILINE)
    differs = []
    for name, want in sorted(pins):
        try:
            have: str | None = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            have = None
        if have != want:
            differs.append(f"{name}=={have or 'missing'} (locked {want})")
    return {"lock": LOCK_FILE, "sha256": hashlib.sha256(data).hexdigest(), "differs": differs}


def lock_hashes(lock_path: str | Path = "dvc.lock") -> dict[str, str]:
    """Every output path recorded in dvc.lock → its md5 (empty without a lock file)."""
    p = Path(lock_path)
    if not p.exists():
        return {}
    try:
        # libyaml's loader where installed: dvc.lock of the default run is ~180 KB (0.6 s
        # in pure Python, read by every rerank stage)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        lock = yaml.load(p.read_text(encoding="utf-8"), Loader=loader) or {}
    except yaml.YAMLError as e:
        log.warning("%s: unreadable (%s); the run's metadata has no DVC hashes", p, e)
        return {}
    out: dict[str, str] = {}
    for stage in (lock.get("stages") or {}).values():
        for entry in stage.get("outs") or []:
            if "path" in entry and "md5" in entry:
                out[str(entry["path"])] = str(entry["md5"])
    return out


def _git(args: list[str], root: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _public_url(url: str | None) -> str | None:
    """A remote URL without user, password or token; local paths are left out."""
    if not url or not re.match(r"^(https?|ssh|git)://|^[\w.-]+@[\w.-]+:", url):
        return None
    return re.sub(r"^(\w+://)[^/@]*@", r"\1", url)


def source(
    root: str | Path = ".", stage: str | None = None, commit: bool = False
) -> dict[str, Any]:
    """ir_metadata `implementation.source`: the language and, for a pipeline stage, its code
    digest (``data/code/<stage>.txt``: path and MD5); with `commit`, the repository, HEAD
    and whether tracked code differs from it (outside DVC only: these change across clones)."""
    r = Path(root)
    out: dict[str, Any] = {"lang": ["python"]}
    digest = paths.CODE / f"{stage}.txt" if stage else None
    if digest is not None and (r / digest).is_file():
        md5 = hashlib.md5((r / digest).read_bytes()).hexdigest()
        out["code"] = {"digest": digest.as_posix(), "md5": md5}
    if commit:
        url = _public_url(_git(["remote", "get-url", "origin"], r))
        head = _git(["rev-parse", "HEAD"], r)
        out |= {k: v for k, v in (("repository", url), ("commit", head)) if v}
        if head and _git(["status", "--porcelain", "--untracked-files=no", "--", *CODE], r):
            out["dirty"] = True
    return out


def dir_md5(path: str | Path) -> str:
    """Content hash of a directory: md5 over its files' relative paths and md5s, sorted."""
    root = Path(path)
    lines = []
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        digest = hashlib.md5()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{f.relative_to(root).as_posix()} {digest.hexdigest()}\n")
    return hashlib.md5("".join(lines).encode()).hexdigest()


def _reranker(
    params: Params, method: str, seed: int | None, hashes: Mapping[str, str],
    model_dir: str | Path | None,
) -> dict:  # fmt: skip
    """The reranking step: the model, the method's settings (none for an untrained model)."""
    model = params.model
    arch = str(getattr(model, "arch", "cross_encoder")).replace("_", "-")
    trained = method in params.methods
    settings = params.methods[method].settings() if trained else {}
    step: dict[str, Any] = {
        "name": method,
        "method": f"{arch} fine-tuned from {model.name}" if trained else f"{arch} {model.name}",
        "reranks": "bm25",
        "params": {
            **settings,
            "n_layers": model.n_layers,
            "max_len": model.max_len,
            "q_len": model.q_len,
            "seed": params.train.seed if seed is None else seed,
        },
    }
    model_path = paths.models(method).as_posix()
    if trained and model_dir is not None:  # just trained in this process: hash it here
        step["checkpoint"] = {"path": Path(model_dir).as_posix(), "content_md5": dir_md5(model_dir)}
    elif trained and model_path in hashes:
        step["checkpoint"] = {"path": model_path, "md5": hashes[model_path]}
    return step


def _command(params: Params, method: str) -> str:
    """The stage command that writes the run (``train@<method>`` trains and reranks)."""
    if method in params.methods:
        return f"python -m stages.train {method}"
    return f"python -m stages.rerank {method} --zero-shot"


def _stage(params: Params, method: str) -> str:
    """The code digest of the stage that writes the run (pipeline.deps.digest's names)."""
    return f"train@{method}" if method in params.methods else "rerank"


def build_metadata(
    params: Params,
    method: str,
    *,
    seed: int | None = None,
    lock_path: str | Path = "dvc.lock",
    root: str | Path = ".",
    actor: Mapping[str, Any] | None = None,
    commit: bool = False,
    model_dir: str | Path | None = None,
) -> dict[str, Any]:
    """The ir_metadata dict of the run of `method` (one of `seed` when `train.seeds` is set);
    a name outside `methods:` (the `zero-shot` row) is an untrained model. `model_dir`: the
    trained model's directory, hashed here (the `train` stage writes model and run together,
    so dvc.lock does not have the model's hash yet); without it, dvc.lock's hash is used."""
    hashes = lock_hashes(lock_path)
    cand = params.candidates
    data: dict[str, Any] = {"test collection": {"name": params.dataset.name}}
    ir_id = get_source(params.dataset.name).ir_datasets
    if ir_id is not None:
        data["test collection"]["ir_datasets"] = ir_id
    other = [{"name": p, "source": "dvc.lock", "md5": hashes[p]} for p in DATA_OUTS if p in hashes]
    if other:
        data["other"] = other
    meta: dict[str, Any] = {
        "schema-version": SCHEMA_VERSION,
        "tag": method,
        "platform": {
            "software": {
                "libraries": {
                    "python": [f"python=={platform.python_version()}"]
                    + [_version(p) for p in LIBRARIES]
                },
                "retrieval toolkit": [_version(p) for p in TOOLKITS],
                **({"environment": env} if (env := environment(root)) else {}),
            },
            "device": params.train.device,
        },
        "implementation": {
            "executable": {"cmd": _command(params, method)},
            "source": source(root, _stage(params, method), commit),
        },
        "method": {
            "automatic": True,
            "score ties": (
                "in the file: first-stage (BM25 candidate) order; effectiveness metrics: "
                "doc id descending (trec_eval); fairness metrics: tie-averaged"
            ),
            "retrieval": [
                {
                    "name": "bm25",
                    "method": "bm25s BM25",
                    "k1": cand.k1,
                    "b": cand.b,
                    "top_k": cand.top_k,
                },
                _reranker(params, method, seed, hashes, model_dir),
            ],
        },
        "data": data,
    }
    if actor:
        meta["actor"] = dict(actor)
    return meta


def read_metadata(path: str | Path) -> dict[str, Any] | None:
    """The ir_metadata of a TREC run: the YAML file beside it (`<run>.ir_metadata.yaml`, as
    the pipeline writes it) or, in a run annotated as the schema describes, the block between
    `# ir_metadata.start` and `# ir_metadata.end` at its start. None when it has neither."""
    import gzip

    p = Path(path)
    side = metadata_path(p)
    if side.is_file():
        loaded = yaml.safe_load(side.read_text(encoding="utf-8"))
        return loaded if isinstance(loaded, dict) else None
    opener: Any = gzip.open if p.suffix == ".gz" else open
    lines: list[str] = []
    with opener(p, "rt", encoding="utf-8") as f:
        first = f.readline().rstrip("\n")
        if first.strip() != "# ir_metadata.start":
            return None
        for line in f:
            text = line.rstrip("\n")
            if text.strip() == "# ir_metadata.end":
                loaded = yaml.safe_load("\n".join(lines))
                return loaded if isinstance(loaded, dict) else None
            lines.append(text[2:] if text.startswith("# ") else text.lstrip("#"))
    raise InputError(f"{p}: `# ir_metadata.start` without `# ir_metadata.end`")


def post_metadata(params: Params, name: str, seed: int | None = None) -> dict[str, Any]:
    """The ir_metadata of the run of ``post:`` entry ``name``: its base method's (the run it
    re-ranks, `build_metadata`), tagged ``name``, with the post-processor and its settings
    as the last step of ``method.retrieval``."""
    entry = params.post[name]
    meta = build_metadata(params, entry.base, seed=seed)
    meta["tag"] = name
    meta["implementation"]["executable"]["cmd"] = f"python -m stages.post {name}"
    meta["implementation"]["source"] = source(".", "post")
    meta["method"]["retrieval"].append({"name": name, "method": "post-processing",
                                        **entry.settings()})  # fmt: skip
    return meta
