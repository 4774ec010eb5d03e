"""The simulated judge (``sim:default``, ``sim:oracle``): production code, deterministic and seeded.

A displayed candidate's score in one run is
    latent quality(text) + item error(item, text) + position bias(position) + order noise(item, order, text)
    + sample noise(item, order, sample, text),
rounded to an integer and clipped to 0–100. The pieces model what the paper observes:
  * the item error is the same in every order, so some items are wrong however often they are permuted;
  * the order noise depends on the displayed order, not the sample index, so repeating the canonical order
    barely helps (paper Table 2), while permuting averages it away together with the position bias;
  * the sample noise is small, as for a real judge at low temperature.
``sim:default`` draws latent quality from a hash of the candidate text; with a reference (``listwise-ref-…``) it is
mostly how much of the reference the candidate states (``reference_agreement``). ``sim:oracle`` is told which displayed
candidate is truly best (``JudgeCall.oracle_position``) and gives it a quality margin calibrated so that the
direct (canonical, K=1) top-1 accuracy lands near ``target_accuracy`` for 4 candidates in random positions.

A ``chat`` call (the chat door) is a framework's own judge prompt: the simulated judge is told its template's verdict
format (``ChatPayload.verdicts``, from ``judging.templates``) and answers in that template's verdict format, as a judge with a strong first-position
preference would (``CHAT_BIAS`` times the position bias, no order noise): it prefers the answer shown first unless
the answers differ in quality by more than that (a reference it can see, or the texts' latent quality). Straight to
it, a close pair's verdict follows the order; a prompt it does not recognise gets a plain sentence.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pcfjudge import at_rest
from pcfjudge.backends.base import Completion, JudgeCall, ProviderError
from pcfjudge.types import LABELS, Usage

_HEDGES = re.compile(
    r"\b(not sure|uncertain|unclear|i don't know|i do not know|no (?:reliable )?evidence|cannot (?:be )?(?:verif|confirm)"
    r"|can't (?:verif|confirm)|not aware of|may not|unknown|no record)",
    re.I,
)


@dataclass(frozen=True, slots=True)
class SimParams:
    seed: int = 0
    position_bias: float = 5.0  # points added to the first displayed position, falling linearly to 0 at the last
    order_sd: float = 6.0
    item_sd: float = 7.0
    sample_sd: float = 1.5
    target_accuracy: float = 0.86  # sim:oracle direct top-1 accuracy target (4 candidates)
    tie_margin: float = 3.0  # pairwise: |score difference| below this is a tie
    latency_ms: float = 0.0
    fail_rate: float = 0.0
    latency_tail: float = 0.0  # > 0: each call's latency also times exp(tail · N(0, 1)), a long (lognormal) tail


_WORD = re.compile(r"\w+")


def reference_agreement(text: str, reference: str) -> float:
    """How much of ``reference`` the text states, 0–1: 1 when it contains the whole reference (case and
    punctuation aside), else the share of the reference's words it uses."""
    ref = _WORD.findall(reference.lower())
    if not ref:
        return 0.0
    words = _WORD.findall(text.lower())
    if " ".join(ref) in " ".join(words):
        return 1.0
    vocabulary = set(words)
    return sum(1 for w in ref if w in vocabulary) / len(ref)


def _unit(*parts: object) -> random.Random:
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


@at_rest.forget
@lru_cache(maxsize=65_536)
def _uniform(*parts: object) -> float:
    """``_unit(*parts).random()``, drawn once: item-level draws repeat in every permutation of an item."""
    return _unit(*parts).random()


@at_rest.forget
@lru_cache(maxsize=65_536)
def _normal(*parts: object) -> float:
    """``_unit(*parts).gauss(0, 1)``, drawn once (``gauss(0, sd)`` is exactly ``0 + gauss(0, 1) * sd``)."""
    return _unit(*parts).gauss(0, 1)


def _text_id(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@lru_cache(maxsize=64)
def oracle_gap(target: float, noise_sd: float, position_bias: float, n: int = 4) -> float:
    """The quality margin of the best candidate that gives direct top-1 accuracy ≈ ``target``.

    Bisection over a fixed-seed Monte Carlo (common random numbers, so accuracy is monotone in the gap).
    """
    rng = random.Random(12345)
    trials = [
        (rng.randrange(n), [rng.random() * 15 for _ in range(n)], [rng.gauss(0, noise_sd) for _ in range(n)])
        for _ in range(3000)
    ]

    def accuracy(gap: float) -> float:
        hits = 0.0
        for best, spread, noise in trials:
            scores = [
                (70.0 if c == best else 70.0 - gap - spread[c]) + noise[c] + position_bias * (n - 1 - c) / (n - 1)
                for c in range(n)
            ]
            rounded = [round(s) for s in scores]
            top = max(rounded)
            tops = [c for c in range(n) if rounded[c] >= top - 0.5]
            hits += (best in tops) / len(tops)
        return hits / len(trials)

    lo, hi = -20.0, 60.0
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if accuracy(mid) < target else (lo, mid)
    return (lo + hi) / 2


CHAT_BIAS = 3.0
"""A chat call's position bias, in multiples of ``position_bias``."""
CHAT_UNKNOWN = "Simulated answer: this prompt compares nothing the simulated judge recognises."


def _schema_filled(response_format: str | None) -> str | None:
    """An unrecognised prompt's answer as a JSON object of the shape its ``json_schema`` response format asks for (a
    framework's follow-up call, such as DeepEval's reason rewrite, parses it), or None: no such format."""
    try:
        spec: Any = json.loads(response_format or "null")
        schema = spec["json_schema"]["schema"] if spec["type"] == "json_schema" else None
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(schema, dict):
        return None

    def fill(node: Any) -> Any:
        kind = node.get("type") if isinstance(node, dict) else None
        if kind == "object":
            return {name: fill(sub) for name, sub in node.get("properties", {}).items()}
        return {"array": [], "integer": 0, "number": 0, "boolean": False, "null": None}.get(str(kind), CHAT_UNKNOWN)

    return json.dumps(fill(schema))


class SimJudge:
    """Deterministic judgments for listwise, pairwise and keyed calls."""

    def __init__(self, params: SimParams, *, oracle: bool = False) -> None:
        self.params = params
        self.oracle = oracle

    def scores(self, call: JudgeCall, *, bias_scale: float = 1.0, order_scale: float = 1.0) -> list[float]:
        p = self.params
        texts = call.displayed
        n = len(texts)
        ids = [_text_id(t) for t in texts]
        key = call.question if call.reference is None else f"{call.question}\x1d{call.reference}"
        item = _text_id(key + "\x1e" + "\x1e".join(sorted(ids)))
        order = ",".join(ids)
        quality = self._quality(call, ids, item)
        out = []
        for pos, tid in enumerate(ids):
            bias = p.position_bias * bias_scale * ((n - 1 - pos) / (n - 1) if n > 1 else 0.0)
            value = (
                quality[pos]
                + (0 + _normal(p.seed, "item", item, tid) * p.item_sd)
                + bias
                + _unit(p.seed, "order", call.kind, item, order, tid).gauss(0, p.order_sd * order_scale)
                + _unit(p.seed, "sample", call.kind, item, order, call.sample, tid).gauss(0, p.sample_sd)
            )
            out.append(float(min(100, max(0, round(value)))))
        return out

    def _quality(self, call: JudgeCall, ids: list[str], item: str) -> list[float]:
        if not self.oracle or call.oracle_position is None:
            spread = [_uniform(self.params.seed, "quality", tid) for tid in ids]
            if call.reference is None:
                return [30.0 + 50.0 * u for u in spread]
            agree = [reference_agreement(text, call.reference) for text in call.displayed]
            return [15.0 + 70.0 * a + 10.0 * u for a, u in zip(agree, spread, strict=True)]
        noise = (self.params.item_sd**2 + self.params.order_sd**2 + self.params.sample_sd**2) ** 0.5
        gap = oracle_gap(self.params.target_accuracy, noise, self.params.position_bias)
        return [  # oracle_position -1 (ORACLE_ABSENT: a window without it): every candidate shown is a lesser one
            70.0 if pos == call.oracle_position else 70.0 - gap - 15.0 * _uniform(item, "spread", tid)
            for pos, tid in enumerate(ids)
        ]

    def answer(self, call: JudgeCall) -> dict[str, Any]:
        if call.kind == "listwise":
            return self._listwise(call)
        keyed = call.kind == "keyed"
        # A keyed pass solves the question first: far less swayed by order, but its own noise remains.
        a, b = self.scores(call, bias_scale=0.2 if keyed else 1.0, order_scale=0.5 if keyed else 1.0)
        verdict = "tie" if abs(a - b) < self.params.tie_margin else ("A" if a > b else "B")
        out: dict[str, Any] = {
            "rationale": f"Simulated: A scored {a:.0f}, B scored {b:.0f}.",
            "verdict": verdict,
        }
        if keyed:
            out = {"resolved_answer": f"Simulated resolution of: {call.question[:80]}", **out}
        return out

    def chat(self, call: JudgeCall) -> str:
        """A chat call's answer, in its template's verdict format."""
        template = call.chat.verdicts if call.chat is not None else None
        if call.chat is None or template is None:
            shaped = _schema_filled(call.chat.response_format) if call.chat is not None else None
            return CHAT_UNKNOWN if shaped is None else shaped
        labels = call.chat.labels
        scores = self.scores(call, bias_scale=CHAT_BIAS, order_scale=0.0)
        if not template.pairwise:
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
            ranks = [0] * len(scores)
            for place, i in enumerate(order, start=1):
                ranks[i] = place
            return f"Simulated ranking by quality and position. {template.write(tuple(ranks), labels)}"
        a, b = scores
        margin = self.params.tie_margin
        sign = 0 if abs(a - b) < margin else 1 if a > b else -1
        if sign == 0 and not template.tie:
            sign = 1  # no tie to give: the first shown
        verdict = sign * (2 if template.scale == 2 and abs(a - b) >= 6 * margin else 1)
        return template.write(verdict, labels)

    def _listwise(self, call: JudgeCall) -> dict[str, Any]:
        scores = self.scores(call)
        labels = LABELS[: len(scores)]
        entries = []
        for label, text, score in zip(labels, call.displayed, scores, strict=True):
            entries.append(
                {
                    "label": label,
                    "score": score,
                    "rationale": f"Simulated judgment (latent quality plus order effects): {score:.0f}/100.",
                    "major_error": score < 35,
                    "hallucinated_specificity": score < 60 and _uniform(text, "halluc") < 0.3,
                    "calibrated_uncertainty": bool(_HEDGES.search(text)),
                }
            )
        # Ties in score are ranked by displayed position: another (realistic) source of order bias.
        ranking = [labels[i] for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))]
        return {"candidates": entries, "ranking": ranking}


class SimBackend:
    """The simulated judge behind the ``Backend`` interface, with settable latency and failure rate."""

    provider = "sim"

    def __init__(self, params: SimParams) -> None:
        self.params = params
        self._judges = {"default": SimJudge(params), "oracle": SimJudge(params, oracle=True)}
        self._failures = random.Random()

    def judge_for(self, model: str) -> SimJudge:
        return self._judges["oracle" if model == "oracle" else "default"]

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        if self.params.latency_ms > 0:
            tail = (
                math.exp(self.params.latency_tail * self._failures.gauss(0.0, 1.0)) if self.params.latency_tail else 1.0
            )
            await asyncio.sleep(self.params.latency_ms / 1000 * (0.5 + self._failures.random()) * tail)
        if self.params.fail_rate > 0 and self._failures.random() < self.params.fail_rate:
            raise ProviderError("simulated backend failure")
        judge = self.judge_for(call.model)
        text = judge.chat(call) if call.kind == "chat" else json.dumps(shaped(judge.answer(call), call.schema))
        usage = Usage(input_tokens=(len(call.system) + len(call.user)) // 4, output_tokens=len(text) // 4)
        return Completion(text=text, usage=usage)

    async def aclose(self) -> None:
        return None


def shaped(answer: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The simulated (v1-shaped) ``answer`` in the shape ``schema`` asks for, as a constrained engine would write it:
    v2's candidates keyed by label with integral scores, only the properties the schema has, in its order.
    An unknown or empty schema leaves the answer as it is (v1; JSON mode and prompt-only calls)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return answer
    candidates = properties.get("candidates")
    if candidates is None:  # pairwise / keyed
        return {name: answer[name] for name in properties if name in answer}
    if candidates.get("type") != "object":
        return answer
    entry_schemas: list[dict[str, Any]] = list(candidates["properties"].values())
    entry_props: dict[str, Any] = entry_schemas[0]["properties"] if entry_schemas else {}
    entries = {}
    for entry in answer["candidates"]:
        values = {name: entry[name] for name in entry_props if name in entry}
        if "score" in values:
            values["score"] = round(values["score"])
        entries[entry["label"]] = values
    return {"candidates": entries, "ranking": answer["ranking"]}
