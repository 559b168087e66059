"""Recall: what memory hands the model before a call. The question is rewritten into a memory
intent (keywords, the fact keys it touches, a time range), touched and pinned facts are read,
episodes (time-filtered by the question; when its period holds no confident match, matches from
other times follow, labelled weak) and knowledge (never time-filtered) are searched, and the
session's working memory is gathered — one :class:`~trimem.pipeline.bundle.RecallBundle`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from trimem._checks import check_bool, check_callable, check_int, shown
from trimem._core import tokenize
from trimem.config import NEIGHBOUR_POOL, PROFILE_K, Policy
from trimem.errors import ArgumentTypeError, InvalidArgumentError
from trimem.layers._shared import Embedding, check_text
from trimem.pipeline._overlap import Read
from trimem.pipeline.bundle import RecallBundle
from trimem.records import Fact, RecalledEpisode, Scored, Turn, indexed_time
from trimem.rewrite import MemoryIntent
from trimem.scope import check_id, episode_namespace
from trimem.text.asking import is_request
from trimem.text.evidence import evidence_of
from trimem.text.keys import is_note_key
from trimem.text.time_expressions import weekday_words
from trimem.timeutil import MIN_MICROS, TimeLike, as_datetime, now_micros, to_micros

if TYPE_CHECKING:
    from trimem._backend import Backend
    from trimem.layers.episodic import EpisodicMemory
    from trimem.layers.semantic import Facts, KnowledgeBase
    from trimem.layers.working import Sessions
    from trimem.rewrite import Rewriter


__all__ = ["Recall", "Reranker", "covers", "reranked"]
Reranker = Callable[[str, list[str]], Sequence[float]]


class Recall:
    """The recall pipeline of one memory (see :meth:`trimem.Memory.recall`)."""

    def __init__(
        self,
        backend: Backend,
        *,
        episodic: EpisodicMemory,
        facts: Facts,
        knowledge: KnowledgeBase,
        sessions: Sessions,
        embedding: Embedding,
        rewriter: Rewriter,
        tz: tzinfo,
        policy: Policy | None = None,
    ) -> None:
        self._backend = backend
        self._policy = policy or Policy()
        self._episodic = episodic
        self._facts = facts
        self._knowledge = knowledge
        self._sessions = sessions
        self._embed = embedding
        self.rewriter = rewriter
        self.tz = tz

    def __call__(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        k: int = 5,
        k_knowledge: int = 3,
        now: TimeLike | None = None,
        tz: tzinfo | None = None,
        same_session: bool = False,
        n_turns: int = 5,
        layered: bool = False,
        enough: Callable[[str, list[Turn]], bool] | None = None,
        rerank: Reranker | None = None,
        rerank_depth: int = 3,
        touch: bool = True,
        as_of: TimeLike | None = None,
    ) -> RecallBundle:
        t0 = time.perf_counter()
        tz = tz or self.tz
        query = check_text(query)
        namespace = episode_namespace(agent_id, user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        for name, value in (("k", k), ("k_knowledge", k_knowledge), ("rerank_depth", rerank_depth)):
            check_int(name, value, low=1)
        check_int("n_turns", n_turns, low=0)
        for flag, value in (("same_session", same_session), ("layered", layered), ("touch", touch)):
            check_bool(flag, value)
        if tz is not None and not isinstance(tz, tzinfo):
            raise ArgumentTypeError(f"tz must be a datetime.tzinfo, got {shown(tz)}")
        for name, fn in (("enough", enough), ("rerank", rerank)):
            if fn is not None:
                check_callable(name, fn)
        at = now_micros(now)
        cutoff = None if as_of is None else to_micros(as_of)
        if cutoff is not None:
            touch = False
            if now is None:
                at, now = cutoff, cutoff  # "last week" means the week before T
        intent: MemoryIntent = self.rewriter(query, now=as_datetime(now, tz), tz=tz, aliases=self._facts.aliases())
        text = intent.text or query
        time_range = intent.time_range
        if cutoff is not None:
            lo, hi = time_range if time_range is not None else (MIN_MICROS, cutoff)
            time_range = (lo, min(hi, cutoff))
        working: list[Turn] = []
        wvars: dict[str, object] = {}
        wm = self._sessions.peek(session_id) if session_id is not None else None
        if wm is not None:
            working, wvars = wm.recent(n_turns), dict(wm.vars)
        layers = ["working"] if wm is not None else []
        if layered and wm is not None:
            matched = wm.matching(text)
            done = enough(query, matched) if enough is not None else covers(text, matched)
            if done:
                working = matched[-n_turns:] if n_turns > 0 else []
                ms0 = (time.perf_counter() - t0) * 1e3
                return RecallBundle(
                    query=query,
                    intent=intent,
                    working=working,
                    working_vars=wvars,
                    timings={"working": ms0, "total": ms0},
                    tz=tz,
                    layers=layers,
                )
        t1 = time.perf_counter()
        # a model that reads the request's language embeds it as asked (its words of time and
        # manner carry meaning for it); one that does not gets the keyword reading
        vector = self._embed.query(query if self._embed.vouches(query) else text)
        t2 = time.perf_counter()
        depth = k * rerank_depth if rerank is not None else k
        # twice the turns asked (at least NEIGHBOUR_POOL) are weighed with their neighbours
        found = functools.partial(self._episodic.search, text, user_id=user_id, agent_id=agent_id,
                                  k=max(2 * depth, NEIGHBOUR_POOL), depth=depth,
                                  session_id=session_id if same_session else None,
                                  vector=vector, now=at, request=query)  # fmt: skip

        alone = self._embed.floors(self._episodic.floors, query).cosine_alone

        def search(*, time_range: tuple[int, int] | None) -> list[RecalledEpisode]:
            return self._in_context(_asked(found(time_range=time_range), alone), namespace)

        find_knowledge = functools.partial(self._knowledge.search, text, agent_id=agent_id, user_id=user_id,
                                           k=k_knowledge, vector=vector, now=at, before=cutoff)  # fmt: skip
        # A server answers on several connections at once: the searches, the longest reads, start
        # now and run while the facts are read (in-process, a thread hand-off would cost more).
        overlap = self._backend.concurrent_reads
        episodes_read = Read(overlap, search, time_range=time_range)
        knowledge_read = Read(overlap, find_knowledge)
        try:
            if not overlap:  # in process the episodes are searched first (timed as theirs)
                episodes_read.result()
            t_searched = time.perf_counter()

            # where the words a fact was read from rank among the episodes found tells what the
            # request needs of the facts too: the fact index's search fuses it in
            def episode_ranks() -> dict[int, int]:
                return {r.episode.id: i for i, r in enumerate(episodes_read.result())}

            profile, matches = self._profile(intent, text, vector, user_id=user_id, agent_id=agent_id, now=at,
                                             cutoff=cutoff, episode_ranks=episode_ranks)  # fmt: skip
            evidence = self._evidence(profile, namespace)
            t3 = time.perf_counter()
            episodes = episodes_read.result()[:depth]
            if intent.time_range is not None and len(episodes) < depth and all(r.scored.weak for r in episodes):
                wider = search(time_range=None if cutoff is None else (MIN_MICROS, cutoff))[:depth]
                episodes += _outside(episodes, wider, depth - len(episodes))
            if rerank is not None:
                episodes = reranked(rerank, query, episodes, k)
            episodes = self._with_fact_sources(episodes, profile, intent, k, namespace)
            t4 = time.perf_counter()
            knowledge = knowledge_read.result()
        except BaseException:
            episodes_read.settle()
            knowledge_read.settle()
            raise
        t5 = time.perf_counter()
        if touch and (episodes or knowledge):
            self._backend.touch([r.episode.id for r in episodes], [r.doc.id for r in knowledge], at)
        timings = {
            "rewrite": _ms(t0, t1),
            "embed": _ms(t1, t2),
            "facts": _ms(t_searched, t3),
            "episodes": _ms(t2, t_searched) + _ms(t3, t4),
            "knowledge": _ms(t4, t5),
            "total": _ms(t0, time.perf_counter()),
        }
        return RecallBundle(
            query=query,
            intent=intent,
            profile=profile,
            profile_matches=matches,
            profile_evidence=evidence,
            episodes=episodes,
            knowledge=knowledge,
            working=working,
            working_vars=wvars,
            timings=timings,
            tz=tz,
            layers=[*layers, "semantic", "episodic"],
        )

    def _in_context(self, found: list[RecalledEpisode], namespace: str) -> list[RecalledEpisode]:
        """Credits each found turn with ``policy.neighbour_share`` of the fused score of the better
        of its neighbours in its session (the turns said just before and after it; one not among
        the found adds nothing) and orders them again, confident ones first. The words of a
        request often sit in a neighbour of the turn that answers it: "Yes, last weekend!"
        replies to "Did you go to the lake?"."""
        share = self._policy.neighbour_share
        in_session = [r.episode.id for r in found if r.episode.session_id is not None]
        if len(found) < 2 or share == 0.0 or not in_session:  # a turn told outside a session has none
            return found
        score: dict[int | None, float] = {r.episode.id: r.scored.score for r in found}
        near = dict(zip(in_session, self._backend.session_neighbours(namespace, in_session), strict=True))
        out = []
        for r in found:
            prev, nxt = near.get(r.episode.id, (None, None))
            add = share * max(score.get(prev, 0.0), score.get(nxt, 0.0))
            if add > 0.0:
                explained = {**r.scored.explain, "context": round(add, 6)}
                scored = msgspec.structs.replace(r.scored, score=r.scored.score + add, explain=explained)
                r = RecalledEpisode(r.episode, scored, r.via_fact)
            out.append(r)
        out.sort(key=lambda r: (r.scored.weak, -r.scored.score))  # stable: ties keep the fused order
        return out

    def _profile(
        self,
        intent: MemoryIntent,
        text: str,
        vector: np.ndarray | None,
        *,
        user_id: str,
        agent_id: str,
        now: int,
        cutoff: int | None,
        episode_ranks: Callable[[], dict[int, int]] | None = None,
    ) -> tuple[list[Fact], dict[str, Scored]]:
        """Pinned facts, the facts the question names by key, then those the fact index finds
        nearest by keywords and meaning (with their scores); as they stood at ``cutoff``."""
        profile: dict[str, Fact] = {f.key: f for f in self._facts.pinned(user_id=user_id, agent_id=agent_id)}
        for key in intent.keys:
            fact = self._facts.get(key, user_id=user_id, agent_id=agent_id)
            if fact is not None and key not in profile:
                profile[key] = fact
        matches: dict[str, Scored] = {}
        # the days a request names are a time range for the episodes, and words for the habits
        fact_query = " ".join((text, *weekday_words(intent.query)))
        for fact, scored in self._facts.search(fact_query, user_id=user_id, agent_id=agent_id, k=PROFILE_K, vector=vector,
                                               now=now, request=intent.query, episode_ranks=episode_ranks):  # fmt: skip
            if fact.key not in profile:
                profile[fact.key] = fact
                matches[fact.key] = scored
        if cutoff is None:
            return list(profile.values()), matches
        held = self._facts.as_of_many([*profile, *intent.keys], cutoff, user_id=user_id, agent_id=agent_id)
        return held, {f.key: matches[f.key] for f in held if f.key in matches}

    def _evidence(self, profile: list[Fact], namespace: str) -> dict[str, str]:
        """The user's words each keyed fact of the profile was last read from, where they say
        more than its key and value (:func:`~trimem.text.evidence.evidence_of`)."""
        keyed = [(f, f.source[-1]) for f in profile if f.source and not is_note_key(f.key)]
        if not keyed:
            return {}
        out: dict[str, str] = {}
        for (fact, _), ep in zip(keyed, self._backend.episodes([sid for _, sid in keyed])):
            if ep is None or ep.role != "user" or f"{ep.agent_id}/{ep.user_id}" != namespace:
                continue  # a source never crosses scopes
            said = evidence_of(fact.key, fact.value, ep.text)
            if said is not None:
                out[fact.key] = said
        return out

    def _with_fact_sources(
        self, episodes: list[RecalledEpisode], profile: list[Fact], intent: MemoryIntent, k: int, namespace: str
    ) -> list[RecalledEpisode]:
        """Puts first the episodes that are the provenance of the facts the question touches:
        "the database we decided on" means the decision, whatever else shares its words."""
        touched = [f for f in profile if f.key in intent.keys]
        first: list[RecalledEpisode] = []
        found = {r.episode.id: r for r in episodes}
        for fact in touched:
            for sid in reversed(fact.source):
                r = found.pop(sid, None)
                if r is None:
                    ep = self._episodic.get(sid)
                    if ep is None or f"{ep.agent_id}/{ep.user_id}" != namespace:  # a source never crosses scopes
                        continue
                    at = indexed_time(ep)
                    lo, hi = intent.time_range or (at, at + 1)
                    if not lo <= at < hi:
                        continue
                    r = RecalledEpisode(ep, Scored(score=0.0))
                # The source of a fact the question touches is a confident match, whatever its words.
                first.append(RecalledEpisode(r.episode, msgspec.structs.replace(r.scored, weak=False), fact.key))
        if not first:
            return episodes
        rest = [r for r in episodes if r.episode.id in found]
        return (first + rest)[:k]


def _asked(found: list[RecalledEpisode], cosine_alone: float) -> list[RecalledEpisode]:
    """`found`, where a user's question or request to the assistant ("Can you suggest names for
    a sword?") matched by a shared word alone is weak, after the confident matches: it tells what
    the user asked, not what holds of them ("What's my cat's name?" is not answered by it). One
    close in meaning as a whole (its cosine at the confident-alone floor) stays confident."""
    out = [
        RecalledEpisode(r.episode, msgspec.structs.replace(r.scored, weak=True), r.via_fact)
        if not r.scored.weak
        and r.episode.role == "user"
        and (r.scored.cosine if r.scored.cosine is not None else -1.0) < cosine_alone
        and is_request(r.episode.text)
        else r
        for r in found
    ]
    return sorted(out, key=lambda r: r.scored.weak)  # stable: each group keeps its order


def _outside(inside: list[RecalledEpisode], found: list[RecalledEpisode], room: int) -> list[RecalledEpisode]:
    """What a search without the asked period adds to one within it, weak whatever its score:
    when that period holds no confident match, it was likely misread or misremembered, and the
    matches from other times (dated) follow the in-period ones."""
    seen = {r.episode.id for r in inside}
    return [
        RecalledEpisode(r.episode, msgspec.structs.replace(r.scored, weak=True), r.via_fact)
        for r in found
        if r.episode.id not in seen
    ][:room]


def _ms(a: float, b: float) -> float:
    return (b - a) * 1e3


def covers(text: str, turns: list[Turn]) -> bool:
    """Whether the turns contain every keyword of the question (working memory is enough)."""
    wanted = set(tokenize(text, stopwords=True))
    if not turns or not wanted:
        return False
    have: set[str] = set()
    for t in turns:
        have.update(tokenize(t.text, stopwords=True))
    return wanted <= have


def reranked(rerank: Reranker, query: str, found: list[RecalledEpisode], k: int) -> list[RecalledEpisode]:
    """Reorders fused candidates by a caller's reranker (ties keep the fused order)."""
    if not found:
        return found
    scores = [float(x) for x in rerank(query, [r.episode.text for r in found])]
    if len(scores) != len(found) or any(x != x for x in scores):
        raise InvalidArgumentError(
            f"rerank returned {len(scores)} scores (NaN not allowed) for {len(found)} candidates"
        )
    order = sorted(range(len(found)), key=lambda i: -scores[i])[:k]
    out = []
    for i in order:
        r = found[i]
        scored = msgspec.structs.replace(r.scored, explain={**r.scored.explain, "rerank": scores[i]})
        out.append(RecalledEpisode(r.episode, scored, r.via_fact))
    return out
