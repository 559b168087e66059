"""Product names: the known languages, operating systems, databases and editors a fact value may
name (and the key each kind implies), and the tech names the graph recognises in running text.

>>> canonical_value("typescript"), canonical_value("postgres"), canonical_value("Lisbon")
('TypeScript', 'PostgreSQL', 'Lisbon')
>>> known_prefix("Python 3.12 for scripts", ALL_CATEGORIES)
('language', 'Python 3.12', 11)
>>> tech_name("postgres"), tech_name("k8s"), tech_name("go")
('PostgreSQL', 'Kubernetes', None)
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = [
    "ALL_CATEGORIES",
    "ASCII_LOWER",
    "CATEGORY_KEY",
    "KEY_CATEGORY",
    "OS_EDITOR",
    "PRODUCTS",
    "TECH_EXACT",
    "TECH_LOOSE",
    "TECH_NAMES",
    "TECH_RE",
    "alternation",
    "canonical_name",
    "canonical_value",
    "known_prefix",
    "same_value",
    "tech_name",
]

# ------------------------------------------------------------------------------ kinds of value

CATEGORY_KEY: Final = {
    "language": "primary_language",
    "os": "target_os",
    "database": "database",
    "editor": "editor",
}
KEY_CATEGORY: Final = {v: k for k, v in CATEGORY_KEY.items()}
PRODUCTS: Final[dict[str, dict[str, str]]] = {
    "language": {
        **{
            n.casefold(): n
            for n in (
                "Python TypeScript JavaScript Rust Go Java Kotlin Swift C C++ C# Ruby PHP Scala Haskell "
                "Elixir Erlang Clojure OCaml F# Dart Lua R Julia Zig Nim Perl MATLAB Objective-C Crystal "
                "Gleam Elm Fortran COBOL Solidity Groovy Mojo Racket Scheme".split()
            )
        },
        "golang": "Go",
        "js": "JavaScript",
        "ts": "TypeScript",
        "cpp": "C++",
        "csharp": "C#",
        "common lisp": "Common Lisp",
        "visual basic": "Visual Basic",
    },
    "os": {
        **{
            n.casefold(): n
            for n in (
                "macOS Linux Ubuntu Debian Fedora CentOS Windows WSL FreeBSD OpenBSD ChromeOS NixOS "
                "Manjaro openSUSE RHEL".split()
            )
        },
        "mac os x": "macOS",
        "mac os": "macOS",
        "os x": "macOS",
        "osx": "macOS",
        "mac": "macOS",
        "arch linux": "Arch Linux",
        "arch": "Arch Linux",
        "linux mint": "Linux Mint",
        "rocky linux": "Rocky Linux",
        "red hat": "RHEL",
    },
    "database": {
        **{
            n.casefold(): n
            for n in (
                "PostgreSQL MySQL MariaDB SQLite MongoDB Cassandra DynamoDB CockroachDB ClickHouse DuckDB "
                "Neo4j Firestore Supabase TiDB CouchDB Couchbase InfluxDB TimescaleDB ScyllaDB Oracle "
                "Snowflake BigQuery".split()
            )
        },
        "postgres": "PostgreSQL",
        "mongo": "MongoDB",
        "sql server": "SQL Server",
        "mssql": "SQL Server",
    },
    "editor": {
        **{
            n.casefold(): n
            for n in (
                "Vim Neovim Emacs PyCharm WebStorm CLion GoLand RustRover Rider Atom Helix Zed Cursor "
                "Xcode Nano Eclipse Kakoune Notepad++".split()
            )
        },
        "nvim": "Neovim",
        "vs code": "VS Code",
        "vscode": "VS Code",
        "visual studio code": "VS Code",
        "visual studio": "Visual Studio",
        "intellij idea": "IntelliJ IDEA",
        "intellij": "IntelliJ IDEA",
        "sublime text": "Sublime Text",
        "sublime": "Sublime Text",
        "android studio": "Android Studio",
    },
}
ALL_CATEGORIES: Final = frozenset(PRODUCTS)
OS_EDITOR: Final = frozenset({"os", "editor"})


def _product_regex(names: Sequence[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in sorted(names, key=len, reverse=True))
    # the look-ahead keeps "Go" out of "going"/"go-to" and "C" out of "C++"
    return re.compile(rf"(?P<name>{alts})(?![A-Za-z0-9+#_-])(?P<ver>\s*v?\d+(?:\.\d+)*\b)?", re.I)


_PRODUCT_RE: Final = {cat: _product_regex(list(names)) for cat, names in PRODUCTS.items()}


def known_prefix(value: str, cats: frozenset[str]) -> tuple[str, str, int] | None:
    """(category, canonical name + version, matched length) of a known product at the start."""
    best: tuple[str, str, int] | None = None
    for cat in sorted(cats):
        m = _PRODUCT_RE[cat].match(value)
        if m is None:
            continue
        name = m.group("name")
        canon = PRODUCTS[cat][re.sub(r"\s+", " ", name.casefold())]
        if len(canon) == 1 and name != canon:  # "c"/"r" in lowercase are words, not languages
            continue
        ver = (m.group("ver") or "").strip()
        full = f"{canon} {ver}" if ver else canon
        if best is None or m.end() > best[2]:
            best = (cat, full, m.end())
    return best


def canonical_value(value: str) -> str:
    """Product casing for a value that is exactly a known product ("typescript" -> "TypeScript")."""
    hit = known_prefix(value, ALL_CATEGORIES)
    return hit[1] if hit and hit[2] == len(value) else value


def same_value(said: str, stored: str) -> bool:
    """`said` names the `stored` value: the same product ("vscode", "VS Code"), or it with a
    version ("PostgreSQL 16", "postgres")."""
    a, b = canonical_value(said).casefold(), canonical_value(stored).casefold()
    return a == b or (a.startswith(b) and not re.match(r"[a-z0-9+#_-]", a[len(b) : len(b) + 1]))


# ------------------------------------------------------------------------------ tech in running text
# canonical name: "|"-separated aliases, matched case-insensitively; the canonical name is displayed.
TECH_NAMES: Final = {
    "Python": "python",
    "TypeScript": "typescript",
    "JavaScript": "javascript",
    "Java": "java",
    "Kotlin": "kotlin",
    "C++": "c++|cpp",
    "C#": "c#|csharp",
    "PHP": "php",
    "Scala": "scala",
    "Haskell": "haskell",
    "Elixir": "elixir",
    "Erlang": "erlang",
    "Clojure": "clojure",
    "OCaml": "ocaml",
    "Lua": "lua",
    "Zig": "zig",
    "Golang": "golang",
    "SQL": "sql",
    "Bash": "bash",
    "WebAssembly": "webassembly|wasm",
    "Linux": "linux",
    "macOS": "macos|osx",
    "iOS": "ios",
    "Android": "android",
    "Ubuntu": "ubuntu",
    "Debian": "debian",
    "Fedora": "fedora",
    "CentOS": "centos",
    "Docker": "docker",
    "Docker Compose": "docker-compose|docker compose",
    "Podman": "podman",
    "Kubernetes": "kubernetes|k8s",
    "Terraform": "terraform",
    "Ansible": "ansible",
    "Nginx": "nginx",
    "Caddy": "caddy",
    "HAProxy": "haproxy",
    "Traefik": "traefik",
    "Istio": "istio",
    "Redis": "redis",
    "Memcached": "memcached",
    "PostgreSQL": "postgresql|postgres",
    "MySQL": "mysql",
    "MariaDB": "mariadb",
    "SQLite": "sqlite",
    "MongoDB": "mongodb",
    "Cassandra": "cassandra",
    "DynamoDB": "dynamodb",
    "ClickHouse": "clickhouse",
    "DuckDB": "duckdb",
    "Elasticsearch": "elasticsearch",
    "OpenSearch": "opensearch",
    "Neo4j": "neo4j",
    "Kafka": "kafka",
    "RabbitMQ": "rabbitmq",
    "Celery": "celery",
    "Airflow": "airflow",
    "Flink": "flink",
    "Hadoop": "hadoop",
    "BigQuery": "bigquery",
    "AWS": "aws",
    "S3": "s3",
    "EC2": "ec2",
    "GCP": "gcp",
    "Google Cloud": "google cloud",
    "Azure": "azure",
    "Cloudflare": "cloudflare",
    "Vercel": "vercel",
    "Netlify": "netlify",
    "Heroku": "heroku",
    "GitHub": "github",
    "GitHub Actions": "github actions",
    "GitLab": "gitlab",
    "Jenkins": "jenkins",
    "CircleCI": "circleci",
    "Git": "git",
    "Jira": "jira",
    "Confluence": "confluence",
    "Figma": "figma",
    "VS Code": "vs code|vscode|visual studio code",
    "Vim": "vim",
    "Neovim": "neovim|nvim",
    "Emacs": "emacs",
    "IntelliJ IDEA": "intellij idea|intellij",
    "PyCharm": "pycharm",
    "Xcode": "xcode",
    "Node.js": "node.js|nodejs",
    "Deno": "deno",
    "npm": "npm",
    "pnpm": "pnpm",
    "pip": "pip",
    "Maven": "maven",
    "Gradle": "gradle",
    "Webpack": "webpack",
    "Vite": "vite",
    "Vue": "vue.js|vuejs",
    "Svelte": "svelte",
    "Next.js": "next.js|nextjs",
    "Nuxt": "nuxt",
    "Django": "django",
    "FastAPI": "fastapi",
    "Spring Boot": "spring boot",
    "Laravel": "laravel",
    "PyTorch": "pytorch",
    "TensorFlow": "tensorflow",
    "NumPy": "numpy",
    "pandas": "pandas",
    "scikit-learn": "scikit-learn|sklearn",
    "Jupyter": "jupyter",
    "Grafana": "grafana",
    "Datadog": "datadog",
    "OpenTelemetry": "opentelemetry",
    "gRPC": "grpc",
    "GraphQL": "graphql",
    "etcd": "etcd",
    "ZooKeeper": "zookeeper",
    "Supabase": "supabase",
    "Firebase": "firebase",
    "ChatGPT": "chatgpt",
    "Windows": "",
    "Go": "",
    "Rust": "",
    "Swift": "",
    "Ruby": "",
    "Dart": "",
    "Julia": "",
    "Perl": "",
    "React": "",
    "Angular": "",
    "Flask": "",
    "Express": "",
    "Rails": "",
    "Spark": "",
    "Prometheus": "",
    "Sentry": "",
    "Helm": "",
    "Yarn": "",
    "Poetry": "",
    "Cargo": "",
    "Slack": "",
    "Notion": "",
    "Chrome": "",
    "Firefox": "firefox",
    "Safari": "",
    "Lambda": "",
    "Vault": "",
    "Consul": "",
    "Envoy": "",
    "Arch Linux": "arch linux",
}
# Names that are also ordinary English words ("go", "rust", "spark", "express", "node") count
# only written exactly so; the empty alias strings above mark them.
_TECH_EXTRA_EXACT: Final = {"Node": "Node.js", "NodeJS": "Node.js", "Arch": "Arch Linux"}


def _tech_tables() -> tuple[dict[str, str], dict[str, str]]:
    loose: dict[str, str] = {}
    exact: dict[str, str] = dict(_TECH_EXTRA_EXACT)
    for canon, aliases in TECH_NAMES.items():
        if not aliases:
            exact[canon] = canon
            continue
        loose[canon.casefold()] = canon
        for a in aliases.split("|"):
            if a:
                loose[a.casefold()] = canon
    return loose, exact


TECH_LOOSE, TECH_EXACT = _tech_tables()


def alternation(names: Iterable[str]) -> str:
    """One regex alternation of `names`, longest first, any whitespace between their words."""
    # longest first, so "Docker Compose" wins over "Docker" and "阿里巴巴" over "阿里"
    return "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in sorted(set(names), key=len, reverse=True))


# Not inside a path or file name ("/etc/nginx/nginx.conf", "redis.conf") nor a longer word. It runs
# on an ASCII-lower-cased copy of the text: re.IGNORECASE makes this alternation four times slower.
TECH_RE: Final = re.compile(
    rf"(?<![a-z0-9_/.])(?:{alternation([*TECH_LOOSE, *(n.lower() for n in TECH_EXACT)])})"
    r"(?![a-z0-9_+#]|[-.][a-z0-9])"
)
ASCII_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

_SPACES: Final = re.compile(r"\s+")


def tech_name(said: str) -> str | None:
    """The canonical name of a tech name as written, or None: names that are also ordinary words
    ("go", "rust") count only written exactly so ("Go", "Rust")."""
    return TECH_EXACT.get(said) or TECH_LOOSE.get(_SPACES.sub(" ", said.casefold()))


def canonical_name(name: str) -> str:
    """Product casing for a name that is exactly a known product ("postgres" -> "PostgreSQL",
    "golang" -> "Go"), else the name as given: one spelling for reflect's values and the graph's
    entities."""
    value = canonical_value(name)
    return value if value != name else tech_name(name) or name
