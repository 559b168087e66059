"""The memory graph: entities and the relations between them, read from episodes and facts.

Every episode adds what it mentions — people, places, organisations, products and tech (Docker,
PostgreSQL, Node.js), versions (v18.2.0), ports (8080), hosts, files, code identifiers, quoted
names, Chinese names of things (张三, 后端) — and the relations its sentences state: "X uses Y",
"X depends on Y", "X works at Y", "X 负责 Y", "我们用 X 做 Y"… plus ``mentioned_with`` between
everything one episode mentions (weight 1 in one sentence, 0.5 in one episode). A fact
``key → value`` becomes ``(user, key, value)``. Each entity and relation keeps its provenance
(episode ids, fact keys), first and last sighting (µs) and a mention count or weight, so
forgetting an episode removes exactly what only that episode supported.

Extraction is rule-based by default (English and Chinese, local, deterministic; see
:func:`extract`); ``MemoryGraph(extractor=llm)`` takes any ``callable(text) -> JSON or mapping``
of ``{"entities": [...], "relations": [...]}`` instead, validated item by item. Scopes (a string
such as ``"agent/user"``) never mix: every entity and relation belongs to exactly one.

>>> g = MemoryGraph()
>>> ents, rels = g.add_episode(1, "Alice uses Docker and PostgreSQL.", 0, scope="default/u1")
>>> [(e.name, e.type) for e in ents]
[('Alice', 'person'), ('Docker', 'tech'), ('PostgreSQL', 'tech')]
>>> [(r.subject, r.predicate, r.object) for r in rels if r.predicate != "mentioned_with"]
[('Alice', 'uses', 'Docker'), ('Alice', 'uses', 'PostgreSQL')]
>>> _ = g.add_episode(2, "我们用 Redis 做缓存，张三负责后端。", 1, scope="default/u1")
>>> g.add_fact("database", "postgres", scope="default/u1", timestamp=2)
>>> [(r.subject, r.predicate, r.object) for r in g.relations(scope="default/u1", entity="PostgreSQL")
...  if r.predicate != "mentioned_with"]
[('Alice', 'uses', 'PostgreSQL'), ('user', 'database', 'PostgreSQL')]
>>> [e.name for e in g.neighbours("redis", scope="default/u1").entities]
['Redis', '缓存', 'team', '后端', '张三']
>>> g.remove_sources([2])
>>> g.entities(scope="default/u1", type="person")[0].name
'Alice'
>>> MemoryGraph.decode(g.encode()) == g
True
"""

from __future__ import annotations

import bisect
import json
import math
import re
import string
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from trimem.errors import GraphExtractionError, InvalidArgumentError, StoreCorruptedError, StoreVersionError
from trimem.text.script import HAN_RANGE as CJK_RANGE
from trimem.text.script import prepare_text
from trimem.timeutil import TimeLike, from_micros, to_micros

__all__ = [
    "Entity",
    "Extraction",
    "FoundEntity",
    "FoundRelation",
    "GraphExtractionError",
    "GraphExtractor",
    "MemoryGraph",
    "Relation",
    "Subgraph",
    "extract",
    "parse_extraction",
]

MENTIONED_WITH: Final = "mentioned_with"
MAX_NAME_CHARS: Final = 80
MAX_COOCCURRING: Final = 30
"""Co-occurrence pairs come from the first 30 entities of an episode (at most 435 pairs): a long
log pasted into memory must not cost a quadratic number of edges."""
SAME_SENTENCE, SAME_EPISODE = 1.0, 0.5
FORMAT_VERSION: Final = 1


# ============================================================================ public records


class Entity(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entity of a scope: its display name (first sighting), type and provenance.

    Types from the rules: person, place, org, tech, version, port, host, url, email, path,
    file, code, concept (a common noun), thing (an unknown name), user (the speaker), group
    (the team). A later, more specific sighting replaces concept or thing."""

    name: str
    type: str
    mentions: int  # how often its sources mention it
    sources: list[int]  # episode ids, ascending
    first_seen: int  # µs since the epoch, UTC
    last_seen: int
    scope: str = ""
    facts: list[str] = []  # keys of the facts that name it


class Relation(msgspec.Struct, frozen=True, omit_defaults=True):
    """A (subject, predicate, object) triple; ``mentioned_with`` is symmetric (subject < object)."""

    subject: str
    predicate: str
    object: str
    weight: float  # statements (1 each) or co-occurrence (1 per sentence, 0.5 per episode), summed
    sources: list[int]
    first_seen: int
    last_seen: int
    scope: str = ""
    facts: list[str] = []


class Subgraph(msgspec.Struct, frozen=True):
    """What :meth:`MemoryGraph.neighbours` returns: entities in BFS order, and every relation
    between two of them. Empty when the entity is unknown in the scope."""

    center: str
    scope: str
    depth: int
    entities: list[Entity]
    relations: list[Relation]

    def to_text(self) -> str:
        if not self.entities:
            return f"[{self.scope}] {self.center!r}: not in the graph"
        head = f"[{self.scope}] around {self.entities[0].name} (depth {self.depth})"
        return "\n".join([head, *_listing(self.entities, self.relations)])


class FoundEntity(msgspec.Struct, frozen=True, omit_defaults=True):
    """An entity one text mentions: ``sentences`` are the indices of the sentences naming it
    (empty for a pronoun subject such as "I" → ``user``, which never counts as co-occurring)."""

    name: str
    type: str = "thing"
    mentions: int = 1
    sentences: list[int] = []


class FoundRelation(msgspec.Struct, frozen=True):
    subject: str
    predicate: str
    object: str


class Extraction(msgspec.Struct, frozen=True):
    """What an extractor read from one text (entities in order of first mention)."""

    entities: list[FoundEntity]
    relations: list[FoundRelation]


GraphExtractor = Callable[[str], Any]
"""``callable(text) -> str | Mapping``: JSON (or a mapping) ``{"entities": [...], "relations":
[...]}``, see :func:`parse_extraction`."""


# ============================================================================ text and keys

_CJK: Final = CJK_RANGE
_CJK_RE: Final = re.compile(f"[{_CJK}]")
# ASCII word edges. \b is no use in mixed text: CJK characters are \w, so "用Redis" has no \b.
_A: Final = r"(?<![A-Za-z0-9_])"
_Z: Final = r"(?![A-Za-z0-9_])"
_SPACES: Final = re.compile(r"\s+")
_VERSION_KEY: Final = re.compile(r"v(?=\d+(?:\.\d+)*(?:[-+][0-9a-z.]+)?$)")


def _display(name: str) -> str:
    return _SPACES.sub(" ", prepare_text(name)).strip()


def _key(name: str) -> str:
    """Entities are keyed case-insensitively: "docker" and "Docker" are one; "v18.2.0" is "18.2.0"."""
    k = _display(name).casefold()
    return _VERSION_KEY.sub("", k, count=1)


def _check_scope(scope: object) -> str:
    if not isinstance(scope, str) or not scope or not scope.isprintable():
        raise InvalidArgumentError(f"scope must be a non-empty printable string, got {scope!r}")
    return scope


# ============================================================================ word lists

# canonical name: "|"-separated aliases, matched case-insensitively; the canonical name is displayed.
_TECH_NAMES: Final = {
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
_TECH_EXACT_EXTRA: Final = {"Node": "Node.js", "NodeJS": "Node.js", "Arch": "Arch Linux"}


def _tech_tables() -> tuple[dict[str, str], dict[str, str]]:
    loose: dict[str, str] = {}
    exact: dict[str, str] = dict(_TECH_EXACT_EXTRA)
    for canon, aliases in _TECH_NAMES.items():
        if not aliases:
            exact[canon] = canon
            continue
        loose[canon.casefold()] = canon
        for a in aliases.split("|"):
            if a:
                loose[a.casefold()] = canon
    return loose, exact


_TECH_LOOSE, _TECH_EXACT = _tech_tables()


def _alternation(names: Iterable[str]) -> str:
    # longest first, so "Docker Compose" wins over "Docker" and "阿里巴巴" over "阿里"
    return "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in sorted(set(names), key=len, reverse=True))


# Not inside a path or file name ("/etc/nginx/nginx.conf", "redis.conf") nor a longer word. It runs
# on an ASCII-lower-cased copy of the text: re.IGNORECASE makes this alternation four times slower.
_TECH_RE: Final = re.compile(
    rf"(?<![a-z0-9_/.])(?:{_alternation([*_TECH_LOOSE, *(n.lower() for n in _TECH_EXACT)])})"
    r"(?![a-z0-9_+#]|[-.][a-z0-9])"
)
_ASCII_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

_FIRST_NAMES: Final = frozenset(
    "Alice Bob Carol Charlie Dave David Eve Frank Grace Heidi Ivan Judy Mallory Oscar Peggy Trent "
    "Victor Walter Anna Emma Olivia Liam Noah James John Mary Michael Sarah Tom Jerry Peter Paul "
    "Mark Lisa Linda Kate Mike Sam Alex Chris Dan Ben Max Leo Mia Sophia Lucas Ethan Jack Harry "
    "George Emily Chloe Zoe Lily Jane Tim Anne Nina Omar Priya Raj Wei Yuki Hans Maria Ana Luis".split()
)
_PLACES: Final = frozenset(
    p.casefold()
    for p in "Berlin|London|Paris|Tokyo|New York|San Francisco|Seattle|Beijing|Shanghai|Shenzhen|"
    "Hangzhou|Singapore|Sydney|Toronto|Amsterdam|Munich|Dublin|Boston|Austin|Chicago|Los Angeles|"
    "Madrid|Rome|Vienna|Zurich|Stockholm|Oslo|Helsinki|Copenhagen|Lisbon|Prague|Warsaw|Seoul|"
    "Bangalore|Mumbai|Delhi|Hong Kong|Taipei|Vancouver|Montreal|China|Japan|Germany|France|USA|"
    "UK|Canada|India|Australia|Brazil|Spain|Italy|Netherlands|Sweden|Korea|Europe|Asia".split("|")
)
_ORGS: Final = frozenset(
    o.casefold()
    for o in "Google Microsoft Amazon Apple Meta OpenAI Anthropic Netflix IBM Intel Nvidia Tesla "
    "Alibaba Tencent ByteDance Baidu Huawei Xiaomi Samsung Uber Airbnb Spotify Shopify Stripe".split()
)
_ORG_SUFFIX: Final = frozenset("inc corp corporation ltd llc gmbh labs group university foundation company co".split())
# Capitalised words that start sentences or are function words: never an entity on their own.
_CAP_STOP: Final = frozenset(
    w.casefold()
    for w in "I A An The This That These Those It Its We Our Ours You Your He She They Their His Her "
    "My Me Us Them Let Lets Please Thanks Thank Hi Hello Hey Dear Yes No Not OK Okay So But And Or "
    "Nor If When While Then Also Just Now Today Yesterday Tomorrow Tonight Here There What Why How "
    "Where Who Which Whose Can Could Would Should Will Shall May Might Must Do Does Did Is Are Was "
    "Were Be Been Has Have Had After Before Since Because Maybe Sure Great Good Nice Note Update "
    "FYI BTW TODO FIXME NB PS Re Monday Tuesday Wednesday Thursday Friday Saturday Sunday January "
    "February March April June July August September October November December Mr Mrs Ms Dr".split()
)

# Chinese: no capitals, so word lists carry names; no spaces, so predicates delimit subjects.
_ZH_PLACES: Final = frozenset(
    "北京 上海 广州 深圳 杭州 成都 南京 武汉 西安 重庆 天津 苏州 厦门 长沙 青岛 香港 台北 澳门 "
    "东京 纽约 伦敦 巴黎 柏林 新加坡 硅谷 中国 美国 日本 德国 英国 法国 韩国".split()
)
_ZH_ORGS: Final = frozenset(
    "腾讯 阿里巴巴 阿里 阿里云 百度 字节跳动 字节 华为 美团 京东 小米 网易 拼多多 蚂蚁集团".split()
)
# Nouns of software work: in Chinese the word itself is the cue that a thing is being named.
_ZH_CONCEPTS: Final = frozenset(
    "后端 前端 数据库 缓存 服务器 消息队列 微服务 网关 容器 集群 日志 监控 运维 算法 接口 文档 "
    "支付 订单 架构 中间件 搜索引擎 客户端 服务端 移动端".split()
)
_ZH_LEXICON_RE: Final = re.compile(_alternation([*_ZH_PLACES, *_ZH_ORGS, *_ZH_CONCEPTS]))
_ZH_SURNAMES: Final = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林高罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏"
    "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵"
    "万钱严覃武戴莫孔向汤"
)
_ZH_NAME_RE: Final = re.compile(f"(?:[小老][{_ZH_SURNAMES}]|[{_ZH_SURNAMES}][{_CJK}]{{1,2}})")
# Words that look like surname + given name but are ordinary words.
_ZH_NOT_NAMES: Final = frozenset(
    "周末 马上 高兴 方便 方法 方案 方面 方向 王国 金额 黄色 白天 白色 江湖 向上 万一 石头 程序 "
    "任务 任何 许多 许可 文档 龙头 史上 高级 高效 高手 高端 田地 陆续 段落 雷达 孔子 邵阳 毛病 "
    "余额 杜绝 叶子 苏醒 汤面 韩国 戴上 莫非 孙子 曾经 常用 朱红 蔡伦 沈阳 钱包 付款 付费 贾宝玉".split()
)
_ZH_TITLED_RE: Final = re.compile(f"[{_ZH_SURNAMES}](?:经理|老师|总监|总|工|博士|教授|先生|女士|医生|老板)")

# Chinese runs (a subject or object with no delimiter) end at these function words.
_ZH_STOP_CHARS: Final = frozenset("的了和与跟及或、来做当吧呢啊吗也都还就很上里中时这那但而并等在把被给对向从为")
_ZH_LEAD: Final = re.compile(
    "^(?:昨天|今天|明天|现在|目前|最近|以后|之后|后来|之前|以前|然后|所以|但是|不过|而且|另外|其实|"
    "因为|如果|当时|那时|平时|听说|据说|好像|已经|一直|于是|而|但|又)+"
)
_ZH_TRAIL: Final = re.compile("(?:也|都|还|主要|一直|现在|目前|平时|经常|通常|正在|在|只|一般|平常|最|更)+$")
_ZH_SUBJECT_STOP: Final = frozenset(
    "这 那 它 他 她 他们 她们 它们 你 你们 大家 有人 谁 这个 那个 这里 那里 什么 哪个".split()
)
_ZH_OBJ_LEAD: Final = re.compile("喝|吃|看|听|玩|去")  # "喜欢喝咖啡": the thing is 咖啡

# English words that end (or cannot start) a short noun-phrase object.
_EN_STOP: Final = frozenset(
    "for as in on at with to from by of over than and or but nor so because since when while if then "
    "now too also very really just it its them this that these those which who whom what there here "
    "me you him her us they we i he she not no more most much many some any every each all both "
    "either neither one ones thing things stuff way lot lots bit today tomorrow yesterday always "
    "never often daily instead anymore again well better best is are was were be been being have "
    "has had do does did will would can could should may might must get got make made into onto "
    "about after before during until via per port ports years months weeks days hours minutes".split()
)
_DETERMINER: Final = re.compile(
    r"(?:(?:the|a|an|our|my|their|his|her|your|its|this|these|those|some)\s+)+|这个|那个|一个|我们的|我的"
)

# ============================================================================ mention patterns

_URL_RE: Final = re.compile(r"https?://[^\s<>\"'`，。、）)\]]+")
_EMAIL_RE: Final = re.compile(rf"{_A}[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{{2,}}{_Z}")
_BACKTICK_RE: Final = re.compile(r"`([^`\n]{1,60})`")
# Quoted names: "Phoenix", 'main-db', 「凤凰」, 《三体》 — a name, not a quoted sentence (see _candidates)
_QUOTED_RE: Final = re.compile(
    r"\"([^\"\n]{1,40})\"|(?<![A-Za-z0-9])'([^'\n]{1,40})'(?![A-Za-z0-9])|「([^」\n]{1,40})」|"
    r"『([^』\n]{1,40})』|《([^》\n]{1,40})》"
)
_EXT: Final = (
    "py|pyi|rs|js|mjs|ts|tsx|jsx|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|json|yaml|yml|toml|ini|"
    "cfg|conf|md|rst|txt|csv|tsv|sql|sh|env|lock|html|css|scss|xml|proto|ipynb|log|parquet|tf"
)
_FILE_RE: Final = re.compile(
    rf"(?<![A-Za-z0-9_./-])(?:~|\.{{1,2}})?/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?"  # absolute path
    rf"|{_A}[A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*[A-Za-z0-9_]\.(?:{_EXT})(?![A-Za-z0-9_])"  # file.ext
)
_IP_RE: Final = re.compile(r"(?<![A-Za-z0-9_.])\d{1,3}(?:\.\d{1,3}){3}(?![A-Za-z0-9_]|\.\d)")
_HOST_RE: Final = re.compile(
    rf"{_A}(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|ai|app|cloud|cn|co|local|internal|lan|svc)(?![A-Za-z0-9_-])"
)
# Ports only where the text says so: "port 8080", "localhost:8080", "端口 8080", "8080 端口".
_PORT_RE: Final = re.compile(
    rf"{_A}[Pp]orts?\s*(?:[:=#]|is|number)?\s*(?P<a>\d{{2,5}}){_Z}"
    rf"|(?:{_A}localhost|{_A}[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*|\d{{1,3}}(?:\.\d{{1,3}}){{3}}):(?P<b>\d{{2,5}})(?!\d)"
    r"|端口(?:号)?\s*(?:是|为|:|=)?\s*(?P<c>\d{2,5})(?!\d)"
    r"|(?<![\d.])(?P<d>\d{2,5})\s*端口"
)
# Cheap tests that skip a pattern which cannot match: most texts have no port, path or code.
_PORT_HINT: Final = re.compile(r"[Pp]ort|:\d|端口")
_DOTTED_HINT: Final = re.compile(r"[A-Za-z0-9]\.[A-Za-z0-9]")
_CODE_HINT: Final = re.compile(r"[A-Za-z0-9]_|\(\)|[a-z][A-Z]")
_QUOTE_HINT: Final = re.compile("[\"'「『《]")
# v18.2.0, v2, 1.4.3-rc1; a bare "3.12" only right after a product name (see _tech_versions)
_VERSION_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_.])(?:v\d+(?:\.\d+)*|\d+\.\d+\.\d+)(?:[-+][0-9A-Za-z.]*[0-9A-Za-z])?(?![A-Za-z0-9_]|\.\d)"
)
_TECH_VERSION_RE: Final = re.compile(r"\s*(v?\d+(?:\.\d+)+|v\d+)(?![A-Za-z0-9_]|\.\d)")
_CODE_RE: Final = re.compile(
    rf"{_A}[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\(\))?(?![A-Za-z0-9_(])"  # snake_case, SCREAMING_CASE
    rf"|{_A}[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+(?:\(\))?(?![A-Za-z0-9_(])"  # camelCase
    rf"|{_A}[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\(\)"  # call()
)
_CAP_TOKEN: Final = r"[A-Z][A-Za-z0-9]*(?:[.&-][A-Za-z0-9]+)*"
_CAPS_RE: Final = re.compile(rf"{_A}{_CAP_TOKEN}(?: {_CAP_TOKEN})*{_Z}")
# First person is the speaker ("user" or "assistant"), first person plural the team; an
# assistant's notes name the person it serves "the user".
_PRONOUN_RE: Final = re.compile(
    r"(?<![A-Za-z'])(?:(?P<team>(?:[Mm]y|[Oo]ur|[Tt]he) team|[Ww]e)|(?P<self>I)|(?P<user>[Tt]he user))(?![A-Za-z])"
)
_ZH_PRONOUN_RE: Final = re.compile("(?P<team>我们团队|我们组|我们|咱们)|(?P<self>我)(?!们)")

# ============================================================================ predicates

_EN_PREDICATES: Final = [
    ("used_for", r"(?:is|are|was|were)\s+used\s+(?:for|as)"),
    (
        "responsible_for",
        r"(?:is|are|was|were)\s+responsible\s+for|(?:is|are)\s+in\s+charge\s+of|owns|maintains|maintain|leads|handles",
    ),
    ("written_in", r"(?:is|are|was|were)\s+(?:written|implemented|built)\s+(?:in|with)"),
    (
        "runs_on",
        r"(?:is|are)\s+(?:running|deployed|hosted)\s+on|runs\s+on|run\s+on|running\s+on|deployed\s+on|hosted\s+on",
    ),
    ("depends_on", r"depends\s+on|depend\s+on|relies\s+on|rely\s+on|requires|require"),
    ("works_at", r"works\s+(?:at|for)|work\s+(?:at|for)|worked\s+(?:at|for)|(?:is|was)\s+employed\s+(?:at|by)|joined"),
    ("lives_in", r"lives\s+in|live\s+in|lived\s+in|(?:is|are|am)\s+based\s+in"),
    ("prefers", r"prefers|prefer|preferred"),
    ("likes", r"likes|like|loves|love|enjoys|enjoy"),
    (
        "uses",
        r"(?:is|are|am|was|were)(?:\s+(?:also|now|still|currently|mainly))?\s+using|uses|use|used|using|switched\s+to",
    ),
    ("is", r"is"),
]
_ZH_PREDICATES: Final = [
    ("works_at", f"在(?P<zwork>[{_CJK}A-Za-z0-9]{{2,12}}?)(?:工作|上班|实习)|就职于|任职于|供职于"),
    ("lives_in", "住在|居住在|生活在|定居在"),
    ("runs_on", "运行在|运行于|跑在|部署在|部署于"),
    ("used_for", "用于|用来做|用作"),
    ("depends_on", "依赖于|依赖|依靠"),
    ("responsible_for", "负责"),
    ("prefers", "更喜欢|更爱用|偏好|偏爱|倾向于"),
    ("likes", "喜欢|喜爱|热爱"),
    # bare 用 is "use" except inside words: 应用, 费用, 常用, 用户, 用途…
    (
        "uses",
        "使用|采用|选用|利用|在用"
        "|(?<![使采应费作信通运常享专适试调引占起禁实备租借有没选启])用(?![户途处法量品力场心意])",
    ),
    ("is", "(?<![但可于要不总像算只凡还就])是"),
]


# One regex per language, each alternative a named group; longer phrases come first within a
# language ("is responsible for" before "is"). The Chinese one runs only on text with CJK.
_PRED_NAMES: Final = {
    **{f"e{i}": pred for i, (pred, _) in enumerate(_EN_PREDICATES)},
    **{f"z{i}": pred for i, (pred, _) in enumerate(_ZH_PREDICATES)},
}
_EN_PRED_RE: Final = re.compile(
    "(?<![A-Za-z'])(?:" + "|".join(f"(?P<e{i}>{p})" for i, (_, p) in enumerate(_EN_PREDICATES)) + ")(?![A-Za-z])"
)
_ZH_PRED_RE: Final = re.compile("|".join(f"(?P<z{i}>{p})" for i, (_, p) in enumerate(_ZH_PREDICATES)))
# Chinese predicates an LLM may return, mapped to the canonical ones ("负责" → responsible_for)
_ZH_PRED_WORDS: Final = {
    **{alt: pred for pred, pattern in _ZH_PREDICATES for alt in pattern.split("|") if re.fullmatch(f"[{_CJK}]+", alt)},
    "用": "uses",
    "是": "is",
    "在工作": "works_at",
}
_SUBJECT_TYPES: Final = {"likes", "prefers", "works_at", "lives_in", "responsible_for"}  # a person does these
_OBJECT_TYPES: Final = {"works_at": "org", "lives_in": "place"}
_NAMED_OBJECT: Final = {"works_at", "lives_in"}  # English objects must be names, not "home"

# Between a subject and its predicate: adverbs and auxiliaries only ("Alice also uses", "I have
# used", "张三主要负责"); not "is" ("Bob is like Alice" compares; "is using" is a predicate).
_GAP_RE: Final = re.compile(
    r"(?:'(?:m|re|ve|s|d))?"
    r"(?:\s+(?:also|now|still|mainly|mostly|usually|really|currently|primarily|always|just|only|"
    r"actually|all|both|typically|generally|often|have|has|had|do|does|did)(?![A-Za-z])"
    r"|\s*(?:也|都|还|主要|一直|现在|目前|平时|经常|通常|正在|只|一般|平常|最))*\s*"
)
# A negation right before the predicate cancels it: "doesn't use", "不用", "没有使用".
_NEGATED_RE: Final = re.compile(
    r"(?:(?<![A-Za-z])(?:not|never|no\s+longer|don't|doesn't|didn't|won't|can't|cannot|dont|doesnt|"
    r"isn't|aren't|wasn't|weren't|haven't|hasn't)\s+(?:[a-z]+\s+)?"
    r"|不再|不|没有|没|别|未|从不|从没|无需|并不|并没有)\s*(?:也|都|还|再|太|怎么)?\s*$"
)
_SUBJECT_COORD_RE: Final = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s(?:and|&)\s|和|与|跟|、)\s*")
_VERB_COORD_RE: Final = re.compile(r"\s*(?:,\s*)?(?:and|but\s+also|also|并且|而且|并|也|还)?\s*")
_OBJ_COORD_RE: Final = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+|、|和|与|及|以及|或)\s*")
_USED_FOR_RE: Final = re.compile(r"\s+(?:for|as)\s+|\s*(?:来做|来当|当作|作为|用于|做|当|来)\s*")
_EN_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+#-]*")
_SENTENCE_END_RE: Final = re.compile(r"[.!?](?=\s|$)|[。!?\n]")

_SELF_TYPES: Final = {"user": "user", "assistant": "user", "team": "group"}
_SELF_KEYS: Final = frozenset(_SELF_TYPES)
_GENERIC: Final = frozenset({"thing", "concept"})


# ============================================================================ rule extraction


@dataclass(slots=True, eq=False)
class _Mention:
    start: int
    end: int
    name: str
    type: str
    pronoun: bool = False
    lexicon_zh: bool = False  # a Chinese word-list hit, which a longer compound may absorb


@dataclass(slots=True)
class _Doc:
    """A text being read: its mentions, indexed by start and end, and which characters they own."""

    text: str
    owner: list[_Mention | None] = field(default_factory=list)
    in_predicate: bytearray = field(default_factory=bytearray)
    by_start: dict[int, _Mention] = field(default_factory=dict)
    by_end: dict[int, list[_Mention]] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # sentence end offsets

    def free(self, start: int, end: int) -> bool:
        return all(o is None for o in self.owner[start:end])

    def take(self, m: _Mention) -> _Mention:
        self.owner[m.start : m.end] = [m] * (m.end - m.start)
        if not m.pronoun or m.start not in self.by_start:
            self.by_start[m.start] = m
        self.by_end.setdefault(m.end, []).append(m)
        return m

    def remove(self, m: _Mention) -> None:
        self.owner[m.start : m.end] = [None] * (m.end - m.start)
        if self.by_start.get(m.start) is m:
            del self.by_start[m.start]
        self.by_end[m.end].remove(m)

    def mentions(self) -> list[_Mention]:
        return sorted({id(m): m for ms in self.by_end.values() for m in ms}.values(), key=lambda m: m.start)

    def at(self, pos: int) -> _Mention | None:
        m = self.by_start.get(pos)
        return m if m is not None and not m.pronoun else None

    def ending_at(self, end: int) -> list[_Mention]:
        return self.by_end.get(end, [])

    def sentence(self, pos: int) -> int:
        return bisect.bisect_right(self.ends, pos)


def _sentence_start(text: str, pos: int) -> bool:
    i = pos - 1
    while i >= 0 and text[i] in " \t\"'([*-•–—":
        i -= 1
    return i < 0 or text[i] in ".!?。:;\n"


def _cap_type(name: str) -> str:
    folded = name.casefold()
    words = folded.split()
    if folded in _PLACES:
        return "place"
    if folded in _ORGS or (len(words) > 1 and words[-1].rstrip(".") in _ORG_SUFFIX):
        return "org"
    if name.split()[0] in _FIRST_NAMES:
        return "person"
    return "thing"


def _zh_type(name: str) -> str:
    if name in _ZH_PLACES:
        return "place"
    if name in _ZH_ORGS:
        return "org"
    if name in _ZH_CONCEPTS:
        return "concept"
    if (_ZH_NAME_RE.fullmatch(name) and name not in _ZH_NOT_NAMES) or _ZH_TITLED_RE.fullmatch(name):
        return "person"
    return "concept"


def _classify(name: str) -> str:
    """The type of a bare name (a fact value, say): a known product, place, organisation…"""
    if name.casefold() in _TECH_LOOSE or name in _TECH_EXACT:
        return "tech"
    if _CJK_RE.search(name):
        return _zh_type(name)
    if _VERSION_RE.fullmatch(name):
        return "version"
    t = _cap_type(name) if name[:1].isupper() else "thing"
    return t


def _canonical(name: str) -> str:
    """Product casing for a name that is exactly a known product ("postgres" -> "PostgreSQL")."""
    return _TECH_EXACT.get(name) or _TECH_LOOSE.get(_SPACES.sub(" ", name.casefold()), name)


def _candidates(text: str, predicate_starts: set[int], cjk: bool) -> Iterator[tuple[int, _Mention]]:
    """(priority, mention) for every pattern hit; lower priorities claim their span first.
    Patterns that cannot match (no backtick, no CJK character…) are not run at all."""
    for m in _BACKTICK_RE.finditer(text) if "`" in text else ():
        inner = m.group(1).strip()
        if inner and len(inner.split()) <= 4:
            name = inner.removesuffix("()") or inner
            kind = "tech" if inner.casefold() in _TECH_LOOSE else "code"
            yield 0, _Mention(m.start(), m.end(), _canonical(name) if kind == "tech" else name, kind)
    for m in _QUOTED_RE.finditer(text) if _QUOTE_HINT.search(text) else ():
        inner = next(g for g in m.groups() if g is not None).strip()
        words = inner.split()
        # a name: one word, or capitalised, or Chinese; not a quoted lower-case sentence
        if inner and len(words) <= 4 and (len(words) == 1 or inner[0].isupper() or _CJK_RE.match(inner)):
            t = _classify(inner)
            yield 1, _Mention(m.start(), m.end(), _canonical(inner), "thing" if t in _GENERIC else t)
    for m in _URL_RE.finditer(text) if "://" in text else ():
        url = m.group().rstrip(".,;:!?")
        yield 2, _Mention(m.start(), m.start() + len(url), url, "url")
    for m in _EMAIL_RE.finditer(text) if "@" in text else ():
        yield 2, _Mention(m.start(), m.end(), m.group(), "email")
    for m in _TECH_RE.finditer(text.translate(_ASCII_LOWER)):
        said = _SPACES.sub(" ", text[m.start() : m.end()])
        canon = _TECH_EXACT.get(said) or _TECH_LOOSE.get(said.casefold())
        if canon is not None:  # "go", "rust" in lower case are words, not languages
            yield 3, _Mention(m.start(), m.end(), canon, "tech")
    for m in _FILE_RE.finditer(text) if "/" in text or "." in text else ():
        yield 4, _Mention(m.start(), m.end(), m.group(), "path" if m.group()[:1] in "/~." else "file")
    dotted = _DOTTED_HINT.search(text) is not None
    for m in _IP_RE.finditer(text) if dotted else ():
        yield 5, _Mention(m.start(), m.end(), m.group(), "host")
    for m in _HOST_RE.finditer(text) if dotted else ():
        yield 5, _Mention(m.start(), m.end(), m.group(), "host")
    for m in _PORT_RE.finditer(text) if _PORT_HINT.search(text) else ():
        g = next(n for n in "abcd" if m.group(n) is not None)
        if 1 <= int(m.group(g)) <= 65535:
            yield 6, _Mention(m.start(g), m.end(g), str(int(m.group(g))), "port")
    for m in _VERSION_RE.finditer(text) if dotted or "v" in text else ():
        yield 6, _Mention(m.start(), m.end(), m.group(), "version")
    for m in _ZH_TITLED_RE.finditer(text) if cjk else ():
        yield 7, _Mention(m.start(), m.end(), m.group(), "person")
    for m in _ZH_LEXICON_RE.finditer(text) if cjk else ():
        yield 7, _Mention(m.start(), m.end(), m.group(), _zh_type(m.group()), lexicon_zh=True)
    for m in _CODE_RE.finditer(text) if _CODE_HINT.search(text) else ():
        yield 8, _Mention(m.start(), m.end(), m.group().removesuffix("()"), "code")
    yield from ((9, c) for c in _capitalised(text, predicate_starts))
    for pronouns in (_PRONOUN_RE, _ZH_PRONOUN_RE) if cjk else (_PRONOUN_RE,):
        for m in pronouns.finditer(text):
            key = m.lastgroup if m.lastgroup in ("team", "user") else "self"
            yield 10, _Mention(m.start(), m.end(), key, "group" if key == "team" else "user", pronoun=True)


def _capitalised(text: str, predicate_starts: set[int]) -> Iterator[_Mention]:
    """Capitalised names ("Alice", "Acme Corp", "New York"). A capitalised word that only starts
    a sentence ("Started the service") is a name only when known (a first name, a place), written
    capitalised elsewhere in the text, or the subject of a predicate ("Zoe works at…")."""
    groups: list[tuple[int, list[tuple[int, str]]]] = []
    inner: set[str] = set()
    for m in _CAPS_RE.finditer(text):
        pos, group = m.start(), list[tuple[int, str]]()
        for tok in m.group().split(" "):
            if tok.casefold() in _CAP_STOP or len(tok) > MAX_NAME_CHARS:
                if group:
                    groups.append((group[0][0], group))
                group = []
            else:
                group.append((pos, tok))
            pos += len(tok) + 1
        if group:
            groups.append((group[0][0], group))
    initial = {start for start, _ in groups if _sentence_start(text, start)}
    for start, group in groups:
        if start not in initial:
            inner.add(" ".join(t for _, t in group).casefold())
            inner.update(t.casefold() for _, t in group)
    for start, group in groups:
        if start in initial:
            name = " ".join(t for _, t in group)
            end = start + len(name)
            gap = _GAP_RE.match(text, end)
            known = (
                _cap_type(name) != "thing"
                or name.casefold() in inner
                or (gap is not None and gap.end() in predicate_starts)
            )
            if not known:
                group = group[1:]
                if not group:
                    continue
        start = group[0][0]
        name = " ".join(t for _, t in group)
        yield _Mention(start, start + len(name), name, _cap_type(name))


def _tech_versions(doc: _Doc) -> list[tuple[_Mention, _Mention]]:
    """ "Python 3.12", "Node.js v18.2.0": a version right after a product is that product's."""
    pairs = []
    for m in doc.mentions():
        if m.type != "tech":
            continue
        v = _TECH_VERSION_RE.match(doc.text, m.end)
        if v is None:
            continue
        existing = doc.at(v.start(1))
        if existing is not None and existing.type == "version":
            pairs.append((m, existing))
        elif existing is None and doc.free(v.start(1), v.end(1)):
            pairs.append((m, doc.take(_Mention(v.start(1), v.end(1), v.group(1), "version"))))
    return pairs


def _zh_span(doc: _Doc, i: int) -> _Mention | None:
    """The Chinese word-list hit owning character `i`, when a compound may absorb it."""
    m = doc.owner[i]
    return m if m is not None and m.lexicon_zh else None


def _zh_run_back(doc: _Doc, end: int) -> tuple[int, int] | None:
    """The Chinese phrase ending at `end` (a subject with no other delimiter): back over CJK
    characters and Chinese word-list hits; any other mention, a predicate, 的 or a non-CJK
    character ends it ("我们的服务依赖…" → 服务)."""
    text, i = doc.text, end
    while i > 0 and _CJK_RE.match(text[i - 1]) and text[i - 1] != "的" and not doc.in_predicate[i - 1]:
        if doc.owner[i - 1] is not None and _zh_span(doc, i - 1) is None:
            break
        i -= 1
    return (i, end) if i < end else None


def _zh_run_forward(doc: _Doc, start: int) -> tuple[int, int] | None:
    """The Chinese phrase starting at `start` (an object): up to a function word (的, 和, 做…),
    a predicate, a non-CJK character or a mention other than a word-list hit."""
    text, i = doc.text, start
    while i < len(text) and _CJK_RE.match(text[i]) and not doc.in_predicate[i]:
        if doc.owner[i] is not None:
            m = _zh_span(doc, i)
            if m is None:
                break
            i = m.end
            continue
        if i > start and text[i] in _ZH_STOP_CHARS:
            break
        i += 1
    return (start, i) if i > start else None


def _absorb(doc: _Doc, start: int, end: int, type_: str) -> _Mention:
    """A Chinese compound (订单服务, 后端工程师) replaces the word-list hits inside it."""
    same = doc.by_start.get(start)
    if same is not None and same.end == end:
        return same
    for i in range(start, end):
        m = doc.owner[i]
        if m is not None and m.lexicon_zh:
            doc.remove(m)
    return doc.take(_Mention(start, end, doc.text[start:end], type_))


def _zh_subject(doc: _Doc, end: int, pred: str) -> list[_Mention]:
    """Subjects from the Chinese phrase before a predicate: "张三负责" → 张三, "小王和老李负责" →
    小王, 老李; leading time words and conjunctions ("昨天", "所以") and adverbs are dropped."""
    span = _zh_run_back(doc, end)
    if span is None:
        return []
    s, e = span
    run = doc.text[s:e]
    lead = _ZH_LEAD.match(run)
    trail = _ZH_TRAIL.search(run)
    s += lead.end() if lead else 0
    e -= len(trail.group()) if trail else 0
    parts: list[tuple[int, int, str]] = []
    pos = s
    for part in re.split("([和与跟、])", doc.text[s:e]) if s < e else []:
        if part and part not in "和与跟、":
            if not 2 <= len(part) <= 8 or part in _ZH_SUBJECT_STOP:
                return []
            t = _zh_type(part)
            if pred == "is" and t in _GENERIC:
                return []  # "是" needs a named subject: "张三是…", not "这是…"
            parts.append((pos, pos + len(part), t))
        pos += len(part)
    return [_absorb(doc, a, b, t) for a, b, t in parts]


_PORT_WORD_RE: Final = re.compile(r"(?:[Pp]orts?|端口号?)\s*(?:[:=#]\s*)?")
# After "likes"/"prefers" a verb of use is skipped: "I like using Vim", "我喜欢用 Vim" → likes Vim
_LIKE_LEAD_RE: Final = re.compile(r"\s*(?:(?:to\s+use|using|to\s+work\s+with)\s+|(?:使用|在用|用)\s*)?")


class _Objects:
    """Parses the objects after a predicate: names, or short phrases, joined by and / 和 / 、.
    A phrase ("main database", "coffee") is returned fresh: the caller takes it if it keeps it."""

    def __init__(self, doc: _Doc, clause_starts: set[int]) -> None:
        self.doc = doc
        self.clause_starts = clause_starts
        self.taken: set[int] = set()  # ids of the mentions already an object

    def starts_clause(self, end: int) -> bool:
        g = _GAP_RE.match(self.doc.text, end)
        return g is not None and g.end() in self.clause_starts

    def one(self, pos: int, pred: str, *, first: bool, after_comma: bool = False) -> tuple[_Mention, int, bool] | None:
        """(object, end, had_determiner) at `pos`, or None. After a comma only a name or an
        English phrase continues the list: a Chinese "，" mostly starts a new clause."""
        doc, text = self.doc, self.doc.text
        if pred in ("likes", "prefers"):
            lead = _LIKE_LEAD_RE.match(text, pos)
            pos = lead.end() if lead else pos
        while pos < len(text) and text[pos] == " ":
            pos += 1
        det = _DETERMINER.match(text, pos)
        had_det = det is not None and det.end() > pos
        if det is not None:
            pos = det.end()
        m = doc.at(pos)
        if m is None and first:  # "runs on port 8080", "监听端口 8080": the port itself is the object
            word = _PORT_WORD_RE.match(text, pos)
            port = doc.at(word.end()) if word else None
            m = port if port is not None and port.type == "port" else None
        if m is not None and m.lexicon_zh:
            run = _zh_run_forward(doc, pos)
            if run is not None and run[1] > m.end and run[1] - run[0] <= 8:
                m = _absorb(doc, run[0], run[1], _zh_type(text[run[0] : run[1]]))
        if m is not None:
            if not first and self.starts_clause(m.end):
                return None  # "I use Vim and Bob prefers Emacs": Bob starts a new clause
            return m, m.end, had_det
        if pos < len(text) and _CJK_RE.match(text[pos]):
            return None if after_comma else self._zh(pos, pred, had_det)
        if pred in _NAMED_OBJECT:
            return None
        words: list[str] = []
        end = pos
        for w in _EN_WORD_RE.finditer(text, pos):
            if w.start() != (end + 1 if words else pos) or (words and text[end] != " "):
                break
            if w.group().casefold() in _EN_STOP or w.start() in self.clause_starts or not doc.free(w.start(), w.end()):
                break
            words.append(w.group())
            end = w.end()
            if len(words) == 3:
                break
        if not words or (not first and self.starts_clause(end)):
            return None
        return _Mention(pos, end, " ".join(words), "concept"), end, had_det

    def _zh(self, pos: int, pred: str, had_det: bool) -> tuple[_Mention, int, bool] | None:
        run = _zh_run_forward(self.doc, pos)
        if run is None:
            return None
        s, e = run
        lead = _ZH_OBJ_LEAD.match(self.doc.text, s, e)
        if lead and e > lead.end():
            s = lead.end()
        name = self.doc.text[s:e]
        if not 1 <= len(name) <= 8 or name in _ZH_SUBJECT_STOP or self.starts_clause(e):
            return None
        t = _zh_type(name)
        if t in _GENERIC:
            t = _OBJECT_TYPES.get(pred, t)
        return _absorb(self.doc, s, e, t), e, had_det

    def all(self, pos: int, pred: str) -> Iterator[tuple[_Mention, bool, _Mention | None]]:
        """(object, had_determiner, purpose) for each coordinated object; the purpose is what a
        used object is for ("use Redis for caching", "用 Redis 做缓存")."""
        first, comma = True, False
        while True:
            found = self.one(pos, pred, first=first, after_comma=comma)
            if found is None:
                return
            obj, pos, had_det = found
            purpose = None
            if pred == "uses":
                u = _USED_FOR_RE.match(self.doc.text, pos)
                got = self.one(u.end(), "used_for", first=True) if u is not None else None
                if got is not None:
                    purpose, pos = got[0], got[1]
            yield obj, had_det, purpose
            first = False
            c = _OBJ_COORD_RE.match(self.doc.text, pos)
            if c is None or c.end() == pos:
                return
            pos, comma = c.end(), "," in c.group()


_Pred = tuple[int, int, str, tuple[int, int] | None]  # start, end, predicate, inline object span


def _relations(doc: _Doc, preds: list[_Pred]) -> list[tuple[_Mention, str, _Mention]]:
    text = doc.text
    objects = _Objects(doc, {p[0] for p in preds})
    out: list[tuple[_Mention, str, _Mention]] = []
    previous: tuple[int, list[_Mention]] | None = None  # (end, subjects) of the last statement
    for ps, pe, pred, inline in preds:
        outside = [(ps, pe)] if inline is None else [(ps, inline[0]), (inline[1], pe)]
        if not all(doc.free(a, b) for a, b in outside) or _NEGATED_RE.search(text, max(0, ps - 24), ps):
            continue
        subjects = _subjects(doc, ps, pred, objects.taken)
        if not subjects and previous is not None and previous[0] <= ps:
            if _VERB_COORD_RE.fullmatch(text, previous[0], ps):
                subjects = previous[1]  # "Carol lives in Paris and works for Initech"
        if not subjects:
            continue
        objs: list[tuple[_Mention, bool, _Mention | None]]
        if inline is not None:  # "在阿里巴巴工作": the object sits inside the predicate
            found = objects.one(inline[0], pred, first=True)
            objs = [(found[0], False, None)] if found is not None and found[1] == inline[1] else []
            end = pe
        else:
            objs = list(objects.all(pe, pred))
            end = max((max(o.end, p.end if p else 0) for o, _, p in objs), default=pe)
        if pred == "is":  # "Alice is a designer", "Redis is our cache"; not "Redis is fast"
            objs = [o for o in objs if o[1] or doc.owner[o[0].start] is o[0]]
        for o, _, purpose in objs:  # fresh phrases ("main database") become mentions now
            for m in (o, purpose) if purpose is not None else (o,):
                if doc.owner[m.start] is not m and doc.free(m.start, m.end):
                    doc.take(m)
                objects.taken.add(id(m))
        for s in subjects:
            if pred in _SUBJECT_TYPES and s.type == "thing":
                s.type = "person"  # a capitalised name that works at, lives in, likes… is someone
            for o, _, purpose in objs:
                if o is s or o.pronoun or doc.owner[o.start] is not o:
                    continue
                if pred in _OBJECT_TYPES and o.type in _GENERIC:
                    o.type = _OBJECT_TYPES[pred]
                out.append((s, pred, o))
                if purpose is not None and doc.owner[purpose.start] is purpose:
                    out.append((o, "used_for", purpose))
        if objs:
            previous = (end, subjects)
    return out


def _subjects(doc: _Doc, ps: int, pred: str, objects: set[int]) -> list[_Mention]:
    """The subject(s) right before a predicate: a mention followed only by adverbs, then the
    mentions coordinated with it ("Alice and Bob use…", but not the object of an earlier
    statement: "I use Vim and Bob prefers…"); in Chinese, else the phrase before."""
    text = doc.text
    subject = None
    for end in range(ps, max(-1, ps - 40), -1):
        for m in doc.ending_at(end):
            if _GAP_RE.fullmatch(text, end, ps):
                subject = m
                break
        if subject is not None:
            break
    if subject is None:
        e = ps
        while e > 0 and text[e - 1] == " ":
            e -= 1
        return _zh_subject(doc, e, pred) if e > 0 and _CJK_RE.match(text[e - 1]) else []
    if subject.type == "version":  # "Node.js v18.2.0 runs on…": the product runs, not its version
        product = next((m for m in doc.ending_at(subject.start) if m.type == "tech"), None)
        if product is None and subject.start > 0 and doc.text[subject.start - 1] == " ":
            product = next((m for m in doc.ending_at(subject.start - 1) if m.type == "tech"), None)
        subject = product or subject
    if pred == "is" and (subject.pronoun or subject.type == "concept"):
        return []
    found = [subject]
    while True:
        start, prev = found[-1].start, None
        for end in range(start, max(-1, start - 8), -1):
            prev = next((m for m in doc.ending_at(end) if not m.pronoun), None)
            if prev is not None:
                break
        if prev is None or prev in found or id(prev) in objects:
            break
        if not _SUBJECT_COORD_RE.fullmatch(text, prev.end, start):
            break
        found.append(prev)
    return found[::-1]


def extract(text: str, *, role: str = "user") -> Extraction:
    """The rule extractor: entities and stated relations of one text, English and Chinese.

    First person is the speaker (``role``: "user" or "assistant"), "we"/"我们" the ``team``;
    they appear only as the subject of a relation. Co-occurrence is left to the graph.

    >>> x = extract("张三负责后端。Node.js v18.2.0 runs on port 8080")
    >>> [(e.name, e.type) for e in x.entities]
    [('张三', 'person'), ('后端', 'concept'), ('Node.js', 'tech'), ('v18.2.0', 'version'), ('8080', 'port')]
    >>> for r in x.relations:
    ...     print(r.subject, r.predicate, r.object)
    张三 responsible_for 后端
    Node.js has_version v18.2.0
    Node.js runs_on 8080
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
    text = prepare_text(text)
    speaker = role if role in ("user", "assistant") else None
    doc = _Doc(text, [None] * len(text), bytearray(len(text)))
    doc.ends = [m.end() for m in _SENTENCE_END_RE.finditer(text)]
    cjk = _CJK_RE.search(text) is not None
    preds: list[_Pred] = []
    matches = [*_EN_PRED_RE.finditer(text), *(_ZH_PRED_RE.finditer(text) if cjk else ())]
    for m in sorted(matches, key=lambda m: m.start()):
        inline = m.span("zwork") if m.re is _ZH_PRED_RE and m.group("zwork") else None
        preds.append((m.start(), m.end(), _PRED_NAMES[m.lastgroup or ""], inline))
        doc.in_predicate[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
        if inline is not None:
            doc.in_predicate[inline[0] : inline[1]] = bytes(inline[1] - inline[0])
    # a higher priority first, then the longer, then the earlier mention claims its characters
    candidates = _candidates(text, {p[0] for p in preds}, cjk)
    ranked = sorted(candidates, key=lambda c: (c[0], c[1].start - c[1].end, c[1].start))
    for _, cand in ranked:
        if doc.free(cand.start, cand.end):
            if cand.pronoun and cand.name == "self":
                if speaker is None:
                    continue
                cand.name = speaker
            doc.take(cand)
    versions = _tech_versions(doc)
    triples = _relations(doc, preds)
    triples += [(t, "has_version", v) for t, v in versions]
    return _assemble(doc, triples)


def _assemble(doc: _Doc, triples: list[tuple[_Mention, str, _Mention]]) -> Extraction:
    used = {id(m) for t in triples for m in (t[0], t[2])}
    order: dict[str, tuple[int, str, str, int, set[int]]] = {}
    for m in doc.mentions():
        if m.pronoun and id(m) not in used:
            continue
        name = m.name.strip()[:MAX_NAME_CHARS]
        k = _key(name)
        if not k:
            continue
        first, disp, typ, count, sentences = order.get(k, (m.start, name, m.type, 0, set()))
        if typ in _GENERIC and m.type not in _GENERIC:
            typ = m.type
        if not m.pronoun:
            sentences.add(doc.sentence(m.start))
        order[k] = (first, disp, typ, count + 1, sentences)
    entities = [
        FoundEntity(disp, typ, count, sorted(sentences))
        for _, disp, typ, count, sentences in sorted(order.values(), key=lambda v: v[0])
    ]
    display = {k: v[1] for k, v in order.items()}
    seen: set[tuple[str, str, str]] = set()
    relations = []
    for s, pred, o in sorted(triples, key=lambda t: (min(t[0].start, t[2].start), t[2].start)):
        ks, ko = _key(s.name), _key(o.name)
        if ks == ko or ks not in display or ko not in display or (ks, pred, ko) in seen:
            continue
        seen.add((ks, pred, ko))
        relations.append(FoundRelation(display[ks], pred, display[ko]))
    return Extraction(entities, relations)


# ============================================================================ LLM output


_TYPE_RE: Final = re.compile(r"[a-z][a-z_]{0,23}")
_PRED_OK_RE: Final = re.compile(rf"[a-z][a-z0-9_]{{0,39}}|[{_CJK}]{{1,8}}")
_PRED_SYNONYMS: Final = {
    "use": "uses",
    "using": "uses",
    "used": "uses",
    "depend_on": "depends_on",
    "run_on": "runs_on",
    "work_at": "works_at",
    "works_for": "works_at",
    "work_for": "works_at",
    "like": "likes",
    "prefer": "prefers",
    "live_in": "lives_in",
    "is_a": "is",
    "is_an": "is",
    "co_occurs_with": MENTIONED_WITH,
}
MAX_LLM_ITEMS: Final = 500


def _llm_name(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise GraphExtractionError(f"{where}: a name must be a string, got {type(value).__name__}")
    name = _display(value)
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise GraphExtractionError(f"{where}: invalid name {value[:40]!r} (1 to {MAX_NAME_CHARS} printable characters)")
    return name


def _llm_predicate(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise GraphExtractionError(f"{where}: predicate must be a string, got {type(value).__name__}")
    p = _display(value)
    if p in _ZH_PRED_WORDS:
        return _ZH_PRED_WORDS[p]
    p = re.sub(r"[\s\-]+", "_", p.casefold())
    p = _PRED_SYNONYMS.get(p, p)
    if not _PRED_OK_RE.fullmatch(p):
        raise GraphExtractionError(f"{where}: invalid predicate {value[:40]!r}")
    return p


def _strip_fence(reply: str) -> str:
    s = reply.strip()
    fence = re.fullmatch(r"```[a-zA-Z]*\s*(.*?)\s*```", s, re.S)
    return fence.group(1) if fence else s


def parse_extraction(reply: object, text: str) -> Extraction:
    """Validates an extractor's reply for `text` (raises :class:`GraphExtractionError`).

    ``reply`` is JSON text (a ```json fence is allowed) or a mapping: ``entities`` a list of
    names or ``{"name", "type"?}``; ``relations`` (optional) a list of ``{"subject",
    "predicate", "object"}`` or ``[s, p, o]``. Names are 1–80 printable characters, types
    ``[a-z_]`` words (default "thing"), predicates snake_case ("works for" → ``works_at``) or a
    short Chinese verb (负责 → ``responsible_for``). An endpoint not listed becomes an entity.

    >>> x = parse_extraction('{"entities": ["Alice", {"name": "Acme", "type": "org"}],'
    ...                      ' "relations": [["Alice", "works for", "Acme"]]}', "Alice works for Acme")
    >>> [(e.name, e.type, e.sentences) for e in x.entities], x.relations[0].predicate
    ([('Alice', 'thing', [0]), ('Acme', 'org', [0])], 'works_at')
    >>> parse_extraction('{"entities": [42]}', "")
    Traceback (most recent call last):
    ...
    trimem.errors.GraphExtractionError: entities[0]: a name must be a string, got int
    """
    data: object = reply
    if isinstance(reply, (str, bytes)):
        try:
            data = json.loads(_strip_fence(reply.decode() if isinstance(reply, bytes) else reply))
        except (ValueError, UnicodeDecodeError) as e:
            raise GraphExtractionError(f"the extractor's reply is not JSON: {e}") from None
    if not isinstance(data, Mapping):
        raise GraphExtractionError(f"the extractor must return an object with 'entities', got {type(data).__name__}")
    raw_entities = data.get("entities")
    raw_relations = data.get("relations", [])
    if not isinstance(raw_entities, list):
        raise GraphExtractionError("'entities' must be a list")
    if not isinstance(raw_relations, list):
        raise GraphExtractionError("'relations' must be a list")
    if len(raw_entities) > MAX_LLM_ITEMS or len(raw_relations) > MAX_LLM_ITEMS:
        raise GraphExtractionError(f"at most {MAX_LLM_ITEMS} entities and {MAX_LLM_ITEMS} relations per text")
    types: dict[str, tuple[str, str]] = {}
    for i, item in enumerate(raw_entities):
        where = f"entities[{i}]"
        if isinstance(item, Mapping):
            name = _llm_name(item.get("name"), where)
            t = item.get("type", "thing")
            t = t.strip().casefold().replace(" ", "_") if isinstance(t, str) else t
            if not isinstance(t, str) or not _TYPE_RE.fullmatch(t):
                raise GraphExtractionError(f"{where}: invalid type {item.get('type')!r}")
        else:
            name, t = _llm_name(item, where), "thing"
        types.setdefault(_key(name), (name, t))
    triples: list[tuple[str, str, str]] = []
    for i, item in enumerate(raw_relations):
        where = f"relations[{i}]"
        if isinstance(item, Mapping):
            parts = [item.get("subject"), item.get("predicate"), item.get("object")]
        elif isinstance(item, list) and len(item) == 3:
            parts = list(item)
        else:
            raise GraphExtractionError(f"{where}: a relation is {{subject, predicate, object}} or [s, p, o]")
        s, o = _llm_name(parts[0], where), _llm_name(parts[2], where)
        p = _llm_predicate(parts[1], where)
        for n in (s, o):
            types.setdefault(_key(n), (n, "thing"))
        triples.append((types[_key(s)][0], p, types[_key(o)][0]))
    folded = prepare_text(text).casefold()
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(folded)]
    entities = []
    for name, t in types.values():
        needle = name.casefold()
        # whole words for Latin names ("Go" is not in "Google"); Chinese has no word edges
        hits = [m.start() for m in re.finditer(rf"(?<![a-z0-9_]){re.escape(needle)}(?![a-z0-9_])", folded)]
        entities.append(FoundEntity(name, t, max(1, len(hits)), sorted({bisect.bisect_right(ends, h) for h in hits})))
    seen: set[tuple[str, str, str]] = set()
    relations = []
    for s, p, o in triples:
        k = (_key(s), p, _key(o))
        if k[0] != k[2] and k not in seen:
            seen.add(k)
            relations.append(FoundRelation(s, p, o))
    return Extraction(entities, relations)


# ============================================================================ storage


class _Support(msgspec.Struct, array_like=True, gc=False):
    count: float  # mentions of an entity, weight of a relation
    ts: int


class _EntityRec(msgspec.Struct, array_like=True):
    name: str
    type: str
    episodes: dict[int, _Support] = {}  # in ascending id order (see _Scope.support)
    facts: dict[str, _Support] = {}


class _RelationRec(msgspec.Struct, array_like=True):
    subject: str  # entity keys
    predicate: str
    object: str
    episodes: dict[int, _Support] = {}
    facts: dict[str, _Support] = {}


class _ScopeState(msgspec.Struct, array_like=True):
    name: str
    entities: dict[str, _EntityRec]  # by key
    relations: list[_RelationRec]


class _GraphState(msgspec.Struct):
    format: int
    scopes: list[_ScopeState]


_RKey = tuple[str, str, str]
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_GraphState)


class _Scope:
    """One scope's entities and relations, with the indexes that keep removal and BFS cheap:
    relations by endpoint, and what each episode and fact supports."""

    __slots__ = ("adjacent", "by_episode", "by_fact", "entities", "ids", "relations", "totals")

    def __init__(self) -> None:
        self.entities: dict[str, _EntityRec] = {}
        self.relations: dict[_RKey, _RelationRec] = {}
        self.adjacent: dict[str, set[_RKey]] = {}
        self.by_episode: dict[int, tuple[set[str], set[_RKey]]] = {}
        self.by_fact: dict[str, tuple[set[str], set[_RKey]]] = {}
        # (mentions or weight, first seen, last seen) per entity or relation, kept up to date on
        # add and recomputed after a removal: an entity in thousands of episodes stays cheap.
        self.totals: dict[str | _RKey, tuple[float, int, int]] = {}
        self.ids: dict[str | _RKey, list[int]] = {}  # episode ids as a list, copied for snapshots

    def entity(self, key: str, name: str, type_: str) -> _EntityRec:
        rec = self.entities.get(key)
        if rec is None:
            rec = self.entities[key] = _EntityRec(name, type_)
        elif rec.type in _GENERIC and type_ not in _GENERIC:
            rec.type = type_  # a later, more specific sighting wins over "thing"
        return rec

    def relation(self, rk: _RKey) -> _RelationRec:
        rec = self.relations.get(rk)
        if rec is None:
            rec = self.relations[rk] = _RelationRec(*rk)
            self.adjacent.setdefault(rk[0], set()).add(rk)
            self.adjacent.setdefault(rk[2], set()).add(rk)
        return rec

    def support(self, key: str | _RKey, sup: _Support, *, episode: int | None = None, fact: str | None = None) -> None:
        """Adds `sup` from one source to an entity (`key` a str) or a relation (a triple)."""
        rec: _EntityRec | _RelationRec = self.entities[key] if isinstance(key, str) else self.relations[key]
        total = self.totals.get(key)
        if total is not None and (episode is not None or fact not in rec.facts):
            self.totals[key] = (total[0] + sup.count, min(total[1], sup.ts), max(total[2], sup.ts))
        else:
            self.totals.pop(key, None)
        if episode is not None:
            eps = rec.episodes
            old = eps.get(episode)
            out_of_order = old is None and eps and episode < next(reversed(eps))
            eps[episode] = _Support(sup.count + (old.count if old else 0.0), sup.ts)
            ids = self.ids.get(key)
            if out_of_order:  # provenance stays in id order, so listing it needs no sort
                rec.episodes = dict(sorted(eps.items()))
                self.ids.pop(key, None)
            elif old is None and ids is not None:
                ids.append(episode)
            ents, rels = self.by_episode.setdefault(episode, (set(), set()))
        else:
            assert fact is not None
            rec.facts[fact] = sup
            ents, rels = self.by_fact.setdefault(fact, (set(), set()))
        if isinstance(key, str):
            ents.add(key)
        else:
            rels.add(key)

    def reindex(self) -> None:
        for k, e in self.entities.items():
            for eid in e.episodes:
                self.by_episode.setdefault(eid, (set(), set()))[0].add(k)
            for fk in e.facts:
                self.by_fact.setdefault(fk, (set(), set()))[0].add(k)
        for rk, r in self.relations.items():
            self.adjacent.setdefault(rk[0], set()).add(rk)
            self.adjacent.setdefault(rk[2], set()).add(rk)
            for eid in r.episodes:
                self.by_episode.setdefault(eid, (set(), set()))[1].add(rk)
            for fk in r.facts:
                self.by_fact.setdefault(fk, (set(), set()))[1].add(rk)

    def drop(self, *, episode: int | None = None, fact: str | None = None) -> None:
        """Removes one source; what nothing else supports goes with it."""
        found = self.by_episode.pop(episode, None) if episode is not None else self.by_fact.pop(fact or "", None)
        if found is None:
            return
        ents, rels = found
        for rk in rels:
            self.totals.pop(rk, None)
            self.ids.pop(rk, None)
            r = self.relations[rk]
            if episode is not None:
                del r.episodes[episode]
            else:
                del r.facts[fact or ""]
            if not r.episodes and not r.facts:
                del self.relations[rk]
                for end in (rk[0], rk[2]):
                    adj = self.adjacent[end]
                    adj.discard(rk)
                    if not adj:
                        del self.adjacent[end]
        for k in ents:
            self.totals.pop(k, None)
            self.ids.pop(k, None)
            e = self.entities[k]
            if episode is not None:
                del e.episodes[episode]
            else:
                del e.facts[fact or ""]
            if not e.episodes and not e.facts:
                del self.entities[k]

    def total(self, key: str | _RKey) -> tuple[float, int, int]:
        """(mentions or weight, first seen, last seen) of an entity or relation."""
        t = self.totals.get(key)
        if t is None:
            rec: _EntityRec | _RelationRec = self.entities[key] if isinstance(key, str) else self.relations[key]
            sups = [*rec.episodes.values(), *rec.facts.values()]
            t = self.totals[key] = (sum(s.count for s in sups), min(s.ts for s in sups), max(s.ts for s in sups))
        return t

    def weight(self, rk: _RKey) -> float:
        return self.total(rk)[0]

    def sources(self, key: str | _RKey) -> list[int]:
        """The episode ids of an entity or relation, ascending (a fresh list)."""
        ids = self.ids.get(key)
        if ids is None:
            rec: _EntityRec | _RelationRec = self.entities[key] if isinstance(key, str) else self.relations[key]
            ids = self.ids[key] = list(rec.episodes)
        return ids.copy()


# ============================================================================ the graph


class MemoryGraph:
    """Entities and relations of a memory, per scope, with provenance. Thread-safe.

    ``extractor``: None for the rule extractor (:func:`extract`), or a
    ``callable(text) -> JSON | mapping`` (an LLM) validated by :func:`parse_extraction`;
    an exception it raises propagates, malformed output raises :class:`GraphExtractionError`.
    """

    def __init__(self, *, extractor: GraphExtractor | None = None) -> None:
        self.extractor = extractor
        self._scopes: dict[str, _Scope] = {}
        self._episode_scopes: dict[int, set[str]] = {}
        self._lock = threading.RLock()

    # -- writes -------------------------------------------------------------------------------

    def add_episode(
        self,
        episode_id: int,
        text: str,
        timestamp: TimeLike,
        *,
        scope: str,
        role: str = "user",
        details: bool = True,
    ) -> tuple[list[Entity], list[Relation]]:
        """Adds what episode `episode_id` mentions and states; returns the entities and relations
        it touched as they now stand (in text order, ``mentioned_with`` last). Adding an id again
        replaces it. `role` says who "I" is ("user" or "assistant").

        A returned entity lists all its sources, so the result costs time in proportion to the
        provenance of what the episode touched; ``details=False`` returns ``([], [])`` instead —
        for bulk loads and log replay, where an entity in thousands of episodes is touched often."""
        if isinstance(episode_id, bool) or not isinstance(episode_id, int):
            raise InvalidArgumentError(f"episode_id must be an int, got {episode_id!r}")
        _check_scope(scope)
        ts = to_micros(timestamp)
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
        found = extract(text, role=role) if self.extractor is None else parse_extraction(self.extractor(text), text)
        with self._lock:
            self._forget_episode(episode_id)
            sc = self._scopes.setdefault(scope, _Scope())
            touched_e: dict[str, None] = {}
            touched_r: dict[_RKey, None] = {}
            sentences: dict[str, set[int]] = {}
            for fe in found.entities:
                k = _key(fe.name)
                if not k:
                    continue
                sc.entity(k, _display(fe.name)[:MAX_NAME_CHARS], fe.type)
                sc.support(k, _Support(float(fe.mentions), ts), episode=episode_id)
                touched_e[k] = None
                if k not in _SELF_KEYS:
                    sentences.setdefault(k, set()).update(fe.sentences)
            for fr in found.relations:
                ks, ko = _key(fr.subject), _key(fr.object)
                if ks == ko or ks not in sc.entities or ko not in sc.entities:
                    continue
                self._support(sc, (ks, fr.predicate, ko), episode_id, 1.0, ts, touched_r)
            keys = list(sentences)[:MAX_COOCCURRING]
            for i, a in enumerate(keys):
                for b in keys[i + 1 :]:
                    w = SAME_SENTENCE if sentences[a] & sentences[b] else SAME_EPISODE
                    lo, hi = sorted((a, b))
                    self._support(sc, (lo, MENTIONED_WITH, hi), episode_id, w, ts, touched_r)
            if touched_e:
                self._episode_scopes.setdefault(episode_id, set()).add(scope)
            self._prune(scope)  # an episode that names nothing leaves no empty scope behind
            if not details:
                return [], []
            ents = [self._entity(scope, sc, k) for k in touched_e]
            rels = [self._relation(scope, sc, rk) for rk in touched_r]
            rels.sort(key=lambda r: r.predicate == MENTIONED_WITH)
            return ents, rels

    @staticmethod
    def _support(sc: _Scope, rk: _RKey, episode_id: int, w: float, ts: int, touched: dict[_RKey, None]) -> None:
        sc.relation(rk)
        sc.support(rk, _Support(w, ts), episode=episode_id)
        touched[rk] = None

    def add_fact(self, key: str, value: str, *, scope: str, timestamp: TimeLike, subject: str = "user") -> None:
        """Records fact ``key → value`` as the relation ``(subject, key, value)``; a key set again
        replaces its previous value (only the newest value of a fact is in the graph). A known
        product is named canonically ("postgres" → PostgreSQL); names are cut at 80 characters."""
        _check_scope(scope)
        ts = to_micros(timestamp)
        for what, v in (("key", key), ("value", value), ("subject", subject)):
            if not isinstance(v, str) or not _display(v):
                raise InvalidArgumentError(f"a fact {what} must be a non-empty string, got {v!r}")
        pred = _display(key)
        subj, obj = _canonical(_display(subject))[:MAX_NAME_CHARS], _canonical(_display(value))[:MAX_NAME_CHARS]
        ks, ko = _key(subj), _key(obj)
        with self._lock:
            sc = self._scopes.setdefault(scope, _Scope())
            sc.drop(fact=pred)
            if ks != ko:
                sc.entity(ks, subj, _SELF_TYPES.get(ks) or _classify(subj))
                o_type = _classify(obj)
                if o_type in _GENERIC:
                    o_type = _FACT_VALUE_TYPES.get(pred.casefold(), o_type)
                sc.entity(ko, obj, o_type)
                sc.relation((ks, pred, ko))
                for k in (ks, ko, (ks, pred, ko)):
                    sc.support(k, _Support(1.0, ts), fact=pred)
            self._prune(scope)

    def remove_fact(self, key: str, *, scope: str) -> None:
        """Drops what fact `key` alone supported (the fact was deleted)."""
        with self._lock:
            sc = self._scopes.get(_check_scope(scope))
            if sc is not None:
                sc.drop(fact=_display(key))
                self._prune(scope)

    def remove_sources(self, episode_ids: Iterable[int], *, scope: str | None = None) -> None:
        """Forgets episodes: entities and relations only they supported go, shared ones lose
        their mentions and weight. ``scope`` limits the removal to one scope."""
        ids = [episode_ids] if isinstance(episode_ids, int) else list(episode_ids)
        with self._lock:
            for eid in ids:
                if scope is None:
                    self._forget_episode(eid)
                elif scope in self._episode_scopes.get(eid, ()):
                    self._scopes[scope].drop(episode=eid)
                    self._episode_scopes[eid].discard(scope)
                    if not self._episode_scopes[eid]:
                        del self._episode_scopes[eid]
                    self._prune(scope)

    def _forget_episode(self, eid: int) -> None:
        for name in self._episode_scopes.pop(eid, ()):
            self._scopes[name].drop(episode=eid)
            self._prune(name)

    def _prune(self, name: str) -> None:
        sc = self._scopes.get(name)
        if sc is not None and not sc.entities:
            del self._scopes[name]

    def clear(self, *, scope: str | None = None) -> None:
        with self._lock:
            if scope is None:
                self._scopes.clear()
                self._episode_scopes.clear()
                return
            sc = self._scopes.pop(scope, None)
            for eid in sc.by_episode if sc else ():
                self._episode_scopes[eid].discard(scope)
                if not self._episode_scopes[eid]:
                    del self._episode_scopes[eid]

    # -- reads --------------------------------------------------------------------------------

    def scopes(self) -> list[str]:
        with self._lock:
            return sorted(self._scopes)

    def _selected(self, scope: str | None) -> list[tuple[str, _Scope]]:
        if scope is None:
            return sorted(self._scopes.items())
        sc = self._scopes.get(_check_scope(scope))
        return [(scope, sc)] if sc is not None else []

    def _entity(self, name: str, sc: _Scope, key: str) -> Entity:
        rec = sc.entities[key]
        total, first, last = sc.total(key)
        facts = sorted(rec.facts)
        return Entity(rec.name, rec.type, round(total), sc.sources(key), first, last, name, facts)

    def _relation(self, name: str, sc: _Scope, rk: _RKey) -> Relation:
        rec = sc.relations[rk]
        total, first, last = sc.total(rk)
        s, o = sc.entities[rk[0]].name, sc.entities[rk[2]].name
        return Relation(s, rk[1], o, total, sc.sources(rk), first, last, name, sorted(rec.facts))

    def _resolve(self, sc: _Scope, name: str) -> str | None:
        k = _key(name)
        if k in sc.entities:
            return k
        alias = _key(_canonical(_display(name)))
        return alias if alias in sc.entities else None

    def entity(self, name: str, *, scope: str) -> Entity | None:
        """One entity by name (any case, or a product alias such as "postgres"), or None."""
        with self._lock:
            sc = self._scopes.get(_check_scope(scope))
            k = self._resolve(sc, name) if sc else None
            return self._entity(scope, sc, k) if sc and k else None

    def entities(self, *, scope: str | None = None, type: str | None = None) -> list[Entity]:
        """Entities, most mentioned first (then by name); all scopes when `scope` is None."""
        with self._lock:
            # Sorted by the stored keys: re-keying every display name would cost more than the rest.
            out = [
                (name, k, self._entity(name, sc, k))
                for name, sc in self._selected(scope)
                for k, rec in sc.entities.items()
                if type is None or rec.type == type
            ]
        out.sort(key=lambda t: (t[0], -t[2].mentions, t[1]))
        return [e for _, _, e in out]

    def relations(
        self, *, scope: str | None = None, entity: str | None = None, predicate: str | None = None
    ) -> list[Relation]:
        """Relations, statements before co-occurrence, heaviest first; `entity` keeps those
        touching it (as subject or object)."""
        with self._lock:
            found: list[tuple[str, _Scope, _RKey]] = []
            for name, sc in self._selected(scope):
                if entity is not None:
                    k = self._resolve(sc, entity)
                    keys: Iterable[_RKey] = sc.adjacent.get(k, ()) if k else ()
                else:
                    keys = sc.relations
                found += [(name, sc, rk) for rk in keys if predicate is None or rk[1] == predicate]
            return self._ordered(found)

    def _ordered(self, found: Iterable[tuple[str, _Scope, _RKey]]) -> list[Relation]:
        """Relations by scope, statements before co-occurrence, heaviest first, then by their
        keys (already folded: no name is keyed again)."""
        rels = [(name, rk, self._relation(name, sc, rk)) for name, sc, rk in found]
        rels.sort(key=lambda t: (t[0], t[1][1] == MENTIONED_WITH, -t[2].weight, t[1]))
        return [r for _, _, r in rels]

    def neighbours(self, entity: str, *, scope: str, depth: int = 1, limit: int = 50) -> Subgraph:
        """The entities within `depth` hops of `entity` (BFS; at each step the heaviest links
        first, then by name) — at most `limit`, the entity included — and their relations."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise InvalidArgumentError(f"depth must be an int >= 0, got {depth!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgumentError(f"limit must be an int >= 1, got {limit!r}")
        with self._lock:
            sc = self._scopes.get(_check_scope(scope))
            start = self._resolve(sc, entity) if sc else None
            if sc is None or start is None:
                return Subgraph(entity, scope, depth, [], [])
            order = [start]
            seen = {start}
            frontier = [start]
            for _ in range(depth):
                nxt: list[str] = []
                for k in frontier:
                    weights: dict[str, float] = {}
                    for rk in sc.adjacent.get(k, ()):
                        other = rk[2] if rk[0] == k else rk[0]
                        weights[other] = weights.get(other, 0.0) + sc.weight(rk)
                    for other in sorted(weights, key=lambda o: (-weights[o], o)):
                        if other not in seen and len(order) < limit:
                            seen.add(other)
                            order.append(other)
                            nxt.append(other)
                frontier = nxt
            rels = {rk for k in order for rk in sc.adjacent.get(k, ()) if rk[0] in seen and rk[2] in seen}
            return Subgraph(
                sc.entities[start].name,
                scope,
                depth,
                [self._entity(scope, sc, k) for k in order],
                self._ordered((scope, sc, rk) for rk in rels),
            )

    def to_text(self, *, scope: str | None = None) -> str:
        """A readable listing: per scope its entities, then its relations."""
        with self._lock:
            selected = self._selected(scope)
            if not selected:
                return "(the memory graph is empty)" if scope is None else f"[{scope}] (empty)"
            lines = []
            for name, _sc in selected:
                ents, rels = self.entities(scope=name), self.relations(scope=name)
                lines.append(f"[{name}] {len(ents)} entities, {len(rels)} relations")
                lines += _listing(ents, rels)
            return "\n".join(lines)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(sc.entities) for sc in self._scopes.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryGraph):
            return NotImplemented
        return self._state() == other._state()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n_rel = sum(len(sc.relations) for sc in self._scopes.values())
        return f"MemoryGraph({len(self._scopes)} scopes, {len(self)} entities, {n_rel} relations)"

    # -- persistence --------------------------------------------------------------------------

    def _state(self) -> _GraphState:
        with self._lock:
            scopes = [
                _ScopeState(
                    name,
                    {k: _sorted_rec(sc.entities[k]) for k in sorted(sc.entities)},
                    [_sorted_rec(sc.relations[rk]) for rk in sorted(sc.relations)],
                )
                for name, sc in sorted(self._scopes.items())
            ]
            return _GraphState(FORMAT_VERSION, scopes)

    def encode(self) -> bytes:
        """The graph as msgpack (deterministic: equal graphs give equal bytes; no pickle)."""
        return _encoder.encode(self._state())

    @classmethod
    def decode(cls, data: bytes, *, extractor: GraphExtractor | None = None) -> MemoryGraph:
        """A graph from :meth:`encode` bytes; :class:`StoreCorruptedError` when they are not one."""
        try:
            state = _decoder.decode(data)
        except (msgspec.DecodeError, TypeError) as e:
            raise StoreCorruptedError(f"not an encoded memory graph: {e}") from None
        if state.format != FORMAT_VERSION:
            raise StoreVersionError(f"memory graph format {state.format}; this trimem reads {FORMAT_VERSION}")
        g = cls(extractor=extractor)
        for st in state.scopes:
            sc = _Scope()
            sc.entities = {k: _sorted_rec(e) for k, e in st.entities.items()}
            for r in map(_sorted_rec, st.relations):
                rk = (r.subject, r.predicate, r.object)
                if rk[0] not in sc.entities or rk[2] not in sc.entities:
                    raise StoreCorruptedError(f"relation {rk} names an entity the graph does not hold")
                sc.relations[rk] = r
            sc.reindex()
            if sc.entities:
                g._scopes[st.name] = sc
                for eid in sc.by_episode:
                    g._episode_scopes.setdefault(eid, set()).add(st.name)
        return g

    # -- drawing ------------------------------------------------------------------------------

    def draw(
        self,
        path: str | Path,
        *,
        scope: str | None = None,
        entity: str | None = None,
        depth: int = 1,
        limit: int = 200,
    ) -> None:
        """Draws the graph (or the neighbourhood of `entity`, which needs `scope`) to a PNG or
        SVG file, by suffix. Needs networkx and matplotlib: ``pip install 'trimem[graph]'``."""
        target = Path(path)
        fmt = target.suffix.casefold().lstrip(".")
        if fmt not in ("png", "svg"):
            raise InvalidArgumentError(f"draw writes .png or .svg files, got {str(path)!r}")
        try:
            import networkx as nx
            from matplotlib import font_manager, rc_context
            from matplotlib.figure import Figure
        except ImportError as err:
            raise ImportError(
                f"MemoryGraph.draw needs networkx and matplotlib ({err.name} is missing): pip install 'trimem[graph]'"
            ) from None
        if entity is not None:
            if scope is None:
                raise InvalidArgumentError("draw(entity=...) needs a scope")
            sub = self.neighbours(entity, scope=scope, depth=depth, limit=limit)
            ents, rels = sub.entities, sub.relations
        else:
            ents = self.entities(scope=scope)[:limit]
            rels = self.relations(scope=scope)
        several = len({e.scope for e in ents}) > 1
        graph = nx.Graph()
        for e in ents:
            label = f"{e.scope}: {e.name}" if several else e.name
            graph.add_node((e.scope, _key(e.name)), label=label, type=e.type, mentions=e.mentions)
        labels: dict[tuple[Any, Any], list[str]] = {}
        for r in rels:  # one edge per pair: weights add up, stated predicates label it
            a, b = (r.scope, _key(r.subject)), (r.scope, _key(r.object))
            if a in graph and b in graph:
                old = graph.get_edge_data(a, b, {"weight": 0.0, "stated": False})
                stated = old["stated"] or r.predicate != MENTIONED_WITH
                graph.add_edge(a, b, weight=old["weight"] + r.weight, stated=stated)
                if r.predicate != MENTIONED_WITH:
                    labels.setdefault((a, b) if (b, a) not in labels else (b, a), []).append(r.predicate)
        fonts = {f.name for f in font_manager.fontManager.ttflist}
        cjk = [f for f in _CJK_FONTS if f in fonts]
        with rc_context({"font.family": ["DejaVu Sans", *cjk], "svg.fonttype": "path"}), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*[Gg]lyph.*missing.*")
            warnings.filterwarnings("ignore", message=r".*findfont.*")
            fig = Figure(figsize=(max(6.0, min(24.0, 1.2 * len(graph) ** 0.5 * 3)),) * 2, dpi=100)
            ax = fig.add_subplot()
            ax.set_axis_off()
            if len(graph) == 0:
                ax.text(0.5, 0.5, "(empty graph)", ha="center", va="center")
            else:
                pos = _layout(nx, graph)
                nodes = list(graph.nodes)
                nx.draw_networkx_nodes(
                    graph,
                    pos,
                    ax=ax,
                    nodelist=nodes,
                    node_color=[_TYPE_COLOURS.get(graph.nodes[n]["type"], "#bbbbbb") for n in nodes],
                    node_size=[300 + 120 * min(graph.nodes[n]["mentions"], 20) for n in nodes],
                )
                for stated in (False, True):
                    edges = [(a, b) for a, b, d in graph.edges(data=True) if d["stated"] is stated]
                    nx.draw_networkx_edges(
                        graph,
                        pos,
                        ax=ax,
                        edgelist=edges,
                        width=[min(1.0 + graph.edges[e]["weight"], 6.0) for e in edges],
                        style="solid" if stated else "dashed",
                        alpha=0.8 if stated else 0.35,
                        edge_color="#333333" if stated else "#999999",
                    )
                names = {n: graph.nodes[n]["label"] for n in nodes}
                nx.draw_networkx_labels(graph, pos, ax=ax, labels=names, font_size=9)
                edge_labels = {pair: ", ".join(preds) for pair, preds in labels.items()}
                nx.draw_networkx_edge_labels(graph, pos, ax=ax, edge_labels=edge_labels, font_size=7)
            fig.savefig(target, format=fmt, bbox_inches="tight")


def _layout(nx: Any, graph: Any) -> dict[Any, Any]:
    """Spring layout per connected component (seeded: the same graph draws the same), the
    components in a grid, largest first: one layout of the whole would fling them apart."""
    parts = sorted(nx.connected_components(graph), key=lambda c: (-len(c), min(c)))
    cols = math.ceil(math.sqrt(len(parts)))
    pos: dict[Any, Any] = {}
    for i, nodes in enumerate(parts):
        sub = graph.subgraph(nodes)
        local = nx.spring_layout(sub, seed=7, weight="weight") if len(nodes) > 1 else {next(iter(nodes)): (0.0, 0.0)}
        row, col = divmod(i, cols)
        for n, (x, y) in local.items():
            pos[n] = (col * 2.6 + float(x), -row * 2.6 + float(y))
    return pos


# Chinese names need a CJK font; the first of these that matplotlib knows is used (else boxes).
_CJK_FONTS: Final = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "Noto Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Source Han Sans SC",
    "SimHei",
    "Microsoft YaHei",
    "PingFang SC",
    "Heiti SC",
    "AR PL UMing CN",
    "Droid Sans Fallback",
)
_TYPE_COLOURS: Final = {
    "person": "#f4a261",
    "user": "#e76f51",
    "group": "#e76f51",
    "place": "#2a9d8f",
    "org": "#8ab17d",
    "tech": "#4e79a7",
    "version": "#a0cbe8",
    "port": "#a0cbe8",
    "host": "#a0cbe8",
    "url": "#a0cbe8",
    "code": "#b07aa1",
    "file": "#b07aa1",
    "path": "#b07aa1",
    "concept": "#e9c46a",
    "thing": "#cccccc",
}
_FACT_VALUE_TYPES: Final = {
    "name": "person",
    "city": "place",
    "country": "place",
    "location": "place",
    "hometown": "place",
    "employer": "org",
    "company": "org",
    "primary_language": "tech",
    "database": "tech",
    "editor": "tech",
    "target_os": "tech",
    "framework": "tech",
    "shell": "tech",
    "browser": "tech",
    "城市": "place",
    "公司": "org",
    "名字": "person",
}


def _sorted_rec(rec: Any) -> Any:
    """A copy with its provenance in key order, so that equal graphs encode to equal bytes."""
    return msgspec.structs.replace(
        rec,
        episodes={k: rec.episodes[k] for k in sorted(rec.episodes)},
        facts={k: rec.facts[k] for k in sorted(rec.facts)},
    )


def _when(us: int) -> str:
    return from_micros(us).strftime("%Y-%m-%d %H:%M")


def _provenance(sources: list[int], facts: list[str]) -> str:
    parts = []
    if sources:
        shown = ", ".join(map(str, sources[:8])) + (", …" if len(sources) > 8 else "")
        parts.append(f"episodes {shown}")
    if facts:
        parts.append("facts " + ", ".join(facts[:8]) + (", …" if len(facts) > 8 else ""))
    return "; ".join(parts)


def _listing(ents: list[Entity], rels: list[Relation]) -> list[str]:
    lines = ["entities:"] if ents else []
    for e in ents:
        seen = _when(e.first_seen) if e.first_seen == e.last_seen else f"{_when(e.first_seen)} .. {_when(e.last_seen)}"
        lines.append(f"  {e.name} ({e.type}) x{e.mentions}, {_provenance(e.sources, e.facts)}, seen {seen}")
    if rels:
        lines.append("relations:")
    for r in rels:
        where = _provenance(r.sources, r.facts)
        lines.append(f"  {r.subject} -[{r.predicate}]-> {r.object} (weight {r.weight:g}; {where})")
    return lines
