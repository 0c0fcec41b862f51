"""The adaptive stopping controller (METHODS.md §10; design and simulation: docs/controller.md).

After every round the campaign loop gives :meth:`Controller.decide` the latest
:class:`runner.collector.WorkloadStats` of each workload. The controller answers: stop or
go on, why (one line), which workloads should get the next rounds, the status of every
workload and every verdict, and the events to store.

A campaign stops when, for every workload, there is enough data (>= ``min_rounds`` steady
rounds, >= ``min_subsessions`` subsession means and the §3 rule satisfied), the CI
relative half-width is <= ``ci_rel_width`` (if set), every adjacent pair of the ranking
(§7) is separated or equivalent, and every baseline comparison is decided; or when a
budget runs out (``max_rounds`` per workload, ``max_time`` for the campaign), and then the
reason names each unmet condition and the rounds it still needs.

Honest error rates (§10): verdicts are only declared at *looks* on a geometric schedule
(:func:`stats.sequential.plan_looks`, ratio 1.5) that starts when every workload first has
enough data and ends at ``max_rounds``; look j tests at level α_j with Σ α_j = α
(Bonferroni over looks, or a Lan-DeMets split), with Holm's correction over the adjacent
pairs within a look. So, as long as each look's tests are valid, the probability that any
pair is ever wrongly declared separated is <= α (union bound), however often ``decide`` is
called. A separation must also hold with subsessions of 2q ("pass at q and 2q", §3),
which vetoes most separations that come from a q too small for the series' correlation.
A verdict, once declared, is kept (the union bound covers "ever declared"); a later look
can only revise a separation whose order it significantly contradicts. Width and
enough-data conditions need no α and are checked at every call. A budget stop makes one
last look with whatever α is left.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from runner.collector import WorkloadStats
from runner.decision import BaselineStatus, Decision, Event, PairStatus, WorkloadStatus
from runner.errors import UserError
from stats.autocorr import MIN_SUBSESSIONS
from stats.multi import EQUIVALENT, SEPARATED, UNDECIDED, rank_results
from stats.sequential import (
    SPENDING_KINDS,
    LookPlan,
    Sample,
    baseline_tests,
    confirm_separations,
    growth_needed,
    look_schedule,
    plan_looks,
)

__all__ = [
    "ControllerParams",
    "Controller",
    "Decision",
    "WorkloadStatus",
    "PairStatus",
    "BaselineStatus",
    "Event",
]

DIRECTIONS = ("lower_is_better", "higher_is_better")


@dataclass(frozen=True)
class ControllerParams:
    """Settings of the stopping rule (the adaptive keys of ``runner.config.Settings``).

    Not in the config file (defaults chosen by docs/controller.md's simulation):
    ``look_ratio`` growth of the look schedule (§10); ``spending`` how α is split over the
    looks ("uniform" = Bonferroni, "pocock", "obrien-fleming": stats.sequential);
    ``allocation_share`` the share of a pair's remaining uncertainty a workload must hold
    to get rounds for that pair (see Controller); ``min_series`` fewest readings in a
    workload's series before it counts as having enough data; ``check_2q`` whether a
    separation must also hold with subsessions of 2q.
    """

    confidence: float = 0.95
    ci_rel_width: float | None = 0.05
    alpha: float = 0.01
    margin: float = 0.01
    min_rounds: int = 5
    min_subsessions: int | None = None
    max_rounds: int = 500
    max_time: float | None = 3600.0
    look_ratio: float = 1.5
    spending: str = "uniform"
    allocation_share: float = 1.0 / 3.0
    min_series: int = 8
    check_2q: bool = True

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> UserError:
            return UserError(f"settings.{key}: {why}")

        if not 0 < self.confidence < 1:
            raise bad("confidence", f"must be in (0, 1), got {self.confidence}")
        if self.ci_rel_width is not None and not self.ci_rel_width > 0:
            raise bad("ci_rel_width", f"must be > 0 or null, got {self.ci_rel_width}")
        if not 0 < self.alpha < 0.5:
            raise bad("alpha", f"must be in (0, 0.5), got {self.alpha}")
        if not 0 < self.margin < 1:
            raise bad("margin", f"must be in (0, 1), got {self.margin}")
        if self.min_rounds < 1 or self.max_rounds < self.min_rounds:
            raise bad("max_rounds", f"need 1 <= min_rounds ({self.min_rounds}) <= max_rounds")
        if self.min_subsessions is not None and self.min_subsessions < 2:
            raise bad("min_subsessions", f"must be >= 2, got {self.min_subsessions}")
        if self.max_time is not None and not self.max_time > 0:
            raise bad("max_time", f"must be > 0, got {self.max_time}")
        if not self.look_ratio > 1:
            raise bad("look_ratio", f"must be > 1, got {self.look_ratio}")
        if self.spending not in SPENDING_KINDS:
            raise bad("spending", f"must be one of {SPENDING_KINDS}, got {self.spending!r}")
        if not 0 < self.allocation_share <= 0.5:
            raise bad("allocation_share", f"must be in (0, 0.5], got {self.allocation_share}")

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> ControllerParams:
        """Take every field that ``settings`` (e.g. runner.config.Settings) has."""
        values = {
            f.name: getattr(settings, f.name) for f in fields(cls) if hasattr(settings, f.name)
        }
        values.update(overrides)
        return cls(**values)

    @property
    def subsessions(self) -> int:
        return MIN_SUBSESSIONS if self.min_subsessions is None else self.min_subsessions


# ----------------------------------------------------------------------------- helpers
class _Side(NamedTuple):
    mean: float
    var: float  # s_q^2
    n: int  # n_q
    rounds: int  # rounds behind it (for scaling estimates); 0 = fixed (a stored baseline)

    @property
    def sample(self) -> Sample:
        return Sample(self.mean, self.var, self.n)


def _fmt_pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.3g} %"


# ----------------------------------------------------------------------------- controller
class Controller:
    """Stopping rule and round allocation for one campaign (METHODS.md §10).

    ``workloads``: ``(name, direction)`` or ``(name, direction, group)`` in file order;
    only workloads of one direction and group are ranked together (default group: all
    of one direction). ``baseline``: stored results to compare against, name ->
    ``(mean, variance of subsession means, n_q, q)`` (PILOT "Comparing Results"), or
    ``None``. ``reference``: a workload of this campaign every other one of its group is
    compared with (``settings.baseline``). ``state``: what :meth:`state` returned before
    (stored in the data of "plan"/"look" events), to resume without re-spending α.

    Allocation (``Decision.active``): a workload gets rounds while its own conditions are
    unmet, or while it is in an undecided pair and holds at least ``allocation_share``
    (1/3) of that pair's remaining uncertainty, measured as the variance a round removes,
    ``(s_q²/n_q)/rounds`` (the other side has it all if it is deterministic or out of
    budget). Finished workloads get no rounds unless a pair they are in is undecided.
    """

    def __init__(
        self,
        params: Any,
        workloads: Sequence[tuple[str, str] | tuple[str, str, str]],
        baseline: Mapping[str, tuple[float, float, int, int]] | None = None,
        *,
        reference: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self.params = (
            params
            if isinstance(params, ControllerParams)
            else ControllerParams.from_settings(params)
        )
        self.names: list[str] = []
        self.direction: dict[str, str] = {}
        self.group: dict[str, tuple[str, str]] = {}
        for w in workloads:
            name, direction = str(w[0]), str(w[1])
            if direction not in DIRECTIONS:
                raise ValueError(
                    f"{name}: direction must be one of {DIRECTIONS}, got {direction!r}"
                )
            if name in self.direction:
                raise ValueError(f"workload {name!r} is listed twice")
            self.names.append(name)
            self.direction[name] = direction
            self.group[name] = (direction, str(w[2]) if len(w) > 2 else "")
        if not self.names:
            raise ValueError("the controller needs at least one workload")
        self.baseline: dict[str, _Side] = {}
        for name, value in (baseline or {}).items():
            if name not in self.direction:
                raise ValueError(f"baseline for unknown workload {name!r}")
            mean, var, n_q, _q = value
            if not (math.isfinite(mean) and math.isfinite(var) and var >= 0 and int(n_q) >= 2):
                raise ValueError(f"{name}: baseline needs a finite mean, variance >= 0, n_q >= 2")
            self.baseline[name] = _Side(float(mean), float(var), int(n_q), 0)
        if reference is not None and reference not in self.direction:
            raise ValueError(f"reference {reference!r} is not a workload")
        self.reference = reference
        self._plan: LookPlan | None = None
        self._last_point = -1
        self._spent = 0.0
        self._looks = 0
        self._verdicts: dict[frozenset[str], dict[str, Any]] = {}
        self._base_verdicts: dict[str, dict[str, Any]] = {}
        self._order: dict[tuple[str, str], list[str]] = {}
        self._latest: dict[str, dict[str, Any]] = {}  # last test results, by key
        self._prev: dict[str, Any] = {}
        self._pair_active: set[str] | None = None  # fixed between looks (no churn)
        self._retired: dict[str, str] = {}
        if state:
            self._restore(state)

    # ------------------------------------------------------------------ state (resume)
    def state(self) -> dict[str, Any]:
        """JSON-serialisable state: the look plan, α spent, and every declared verdict."""
        return {
            "plan": None if self._plan is None else self._plan.to_dict(),
            "last_point": self._last_point,
            "spent": self._spent,
            "looks": self._looks,
            "verdicts": [dict(v) for v in self._verdicts.values()],
            "baseline_verdicts": [dict(v) for v in self._base_verdicts.values()],
            "order": [[list(k), v] for k, v in self._order.items()],
        }

    def _restore(self, s: Mapping[str, Any]) -> None:
        p = s.get("plan")
        if p is not None:
            self._plan = LookPlan(
                tuple(p["schedule"]), tuple(p["alphas"]), p["alpha"], p["ratio"], p["spending"]
            )
        self._last_point = int(s.get("last_point", -1))
        self._spent = float(s.get("spent", 0.0))
        self._looks = int(s.get("looks", 0))
        for v in s.get("verdicts", []):
            self._verdicts[frozenset((v["a"], v["b"]))] = dict(v)
        for v in s.get("baseline_verdicts", []):
            self._base_verdicts[v["name"]] = dict(v)
        for k, v in s.get("order", []):
            self._order[(k[0], k[1])] = list(v)

    # ------------------------------------------------------------------ main entry
    def decide(
        self,
        stats: Mapping[str, WorkloadStats | None],
        rounds_used: Mapping[str, int],
        elapsed_s: float = 0.0,
        retired: Mapping[str, str] | None = None,
    ) -> Decision:
        """Decide after the latest round (see the class and module docstrings).

        ``stats``: the latest :func:`runner.collector.collect` result per workload (missing
        or None = no steady data yet); ``rounds_used``: steady rounds per workload;
        ``elapsed_s``: campaign wall-clock time so far (seconds); ``retired``: workloads
        that can get no more rounds (e.g. stopped after repeated failures), name -> why;
        they count as out of budget.
        """
        p = self.params
        self._retired = dict(retired or {})
        for name in list(stats) + list(rounds_used):
            if name not in self.direction:
                raise ValueError(f"unknown workload {name!r}")
        st = {n: stats.get(n) for n in self.names}
        rounds = {n: int(rounds_used.get(n, 0)) for n in self.names}
        clock = max(rounds.values())
        events: list[Event] = []
        enough = {n: self._enough(st[n], rounds[n]) for n in self.names}
        all_enough = all(enough.values())
        if all_enough and self._plan is None:
            first = max(clock, p.min_rounds)
            self._plan = plan_looks(
                first, max(p.max_rounds, first), p.alpha, p.look_ratio, p.spending
            )
            sched = ", ".join(map(str, self._plan.schedule))
            events.append(Event(
                "plan",
                f"every workload has enough data after {clock} rounds: verdicts at looks after "
                f"{sched} rounds, alpha {p.alpha:g} split {p.spending} over {self._plan.n_looks} looks",
                {"plan": self._plan.to_dict(), "state": None},
            ))  # fmt: skip
        look_alpha = None
        if self._plan is not None and all_enough and self._remaining() > 0:
            j = self._plan.point_index(clock)
            if j is not None and j > self._last_point:
                look_alpha = min(self._remaining(), self._plan_cum(j) - self._spent)
                self._last_point = j
        looked = look_alpha is not None and look_alpha > 0
        if looked:
            events.extend(self._look(st, rounds, look_alpha, clock, final=False))
        time_out = p.max_time is not None and elapsed_s >= p.max_time
        status = self._status(st, rounds, enough, realloc=looked)
        budget = (time_out or not status["active"]) and not status["all_done"]
        unmet_before = list(status["unmet"])
        if budget:
            # budget stop: a last look with whatever alpha is left (still <= alpha in total)
            if self._plan is not None and all_enough and self._remaining() > 0:
                events.extend(self._look(st, rounds, self._remaining(), clock, final=True))
                status = self._status(st, rounds, enough, realloc=True)
        stop = time_out or not status["active"] or budget
        reason = self._reason(status, rounds, time_out, elapsed_s, budget, unmet_before)
        events = self._changes(status, stop, reason, early=True) + events
        events.extend(self._changes(status, stop, reason, early=False))
        for e in events:
            if e.kind == "plan":
                e.data["state"] = self.state()
        return Decision(
            stop=stop,
            reason=reason,
            active=() if stop else tuple(status["active"]),
            look=self._looks if any(e.kind == "look" for e in events) else None,
            alpha_spent=self._spent,
            workloads=status["workloads"],
            pairs=tuple(status["pairs"]),
            baselines=tuple(status["baselines"]),
            events=tuple(events),
            next_look_at=self._next_look(),
            met=bool(status["all_done"]) and not budget,
        )

    # ------------------------------------------------------------------ pieces
    def _enough(self, s: WorkloadStats | None, rounds: int) -> bool:
        return bool(
            s is not None
            and s.enough
            and s.s2_q is not None
            and rounds >= self.params.min_rounds
            and (s.n_q or 0) >= self.params.subsessions
            and s.n >= self.params.min_series
        )

    def _out(self, name: str, rounds: Mapping[str, int]) -> bool:
        """No more rounds for ``name``: its budget is used up, or it was retired."""
        return rounds[name] >= self.params.max_rounds or name in self._retired

    def _remaining(self) -> float:
        return (
            max(0.0, self.params.alpha - self._spent)
            if self._spent < self.params.alpha * (1 - 1e-12)
            else 0.0
        )

    def _plan_cum(self, j: int) -> float:
        assert self._plan is not None
        return min(self.params.alpha, math.fsum(self._plan.alphas[: j + 1]))

    def _next_look(self) -> int | None:
        if self._plan is None or self._remaining() <= 0:
            return None
        nxt = self._last_point + 1
        return self._plan.schedule[nxt] if nxt < self._plan.n_looks else None

    def _width_ok(self, s: WorkloadStats | None) -> bool:
        target = self.params.ci_rel_width
        if target is None:
            return True
        if s is None or s.ci_low is None or s.ci_high is None:
            return False
        if s.rel_half_width is None:  # mean 0: only an exact (deterministic) value passes
            return s.ci_low == s.ci_high
        return s.rel_half_width <= target

    def _side(self, s: WorkloadStats, rounds: int) -> _Side:
        assert s.mean is not None and s.s2_q is not None and s.n_q is not None
        return _Side(float(s.mean), float(s.s2_q), int(s.n_q), max(1, rounds))

    def _groups(self) -> dict[tuple[str, str], list[str]]:
        out: dict[tuple[str, str], list[str]] = {}
        for n in self.names:
            out.setdefault(self.group[n], []).append(n)
        return out

    def _baseline_pairs(self) -> list[tuple[str, str]]:
        """(workload, baseline label) of every baseline comparison; label "@stored" or a name."""
        pairs = [(n, "@stored") for n in self.names if n in self.baseline]
        if self.reference is not None:
            g = self.group[self.reference]
            pairs += [
                (n, self.reference)
                for n in self.names
                if n != self.reference and self.group[n] == g
            ]
        return pairs

    def _look(
        self, st: Mapping[str, WorkloadStats | None], rounds: Mapping[str, int],
        alpha: float, clock: int, final: bool,
    ) -> list[Event]:  # fmt: skip
        """Test every adjacent pair and baseline at level ``alpha``; record new verdicts."""
        p = self.params
        self._looks += 1
        self._spent += alpha
        look = self._looks
        events: list[Event] = []
        for key, members in self._groups().items():
            if len(members) < 2:
                self._order[key] = list(members)
                continue
            k = len(members)
            rows = [
                {
                    "name": n,
                    "mean": st[n].mean,
                    "variance": st[n].s2_q,
                    "n": st[n].n_q,
                    "direction": self.direction[n],
                }  # fmt: skip
                for n in members
            ]
            # CIs at the Bonferroni level, so "CIs disjoint" never bypasses Holm (§7)
            conf = 1 - alpha / (k - 1)
            if conf >= 1.0 - 1e-15:  # a look with (numerically) no alpha decides nothing
                self._order[key] = sorted(members, key=lambda n: self._sort_key(n, st[n]))
                continue
            ranking = rank_results(rows, alpha=alpha, margin=p.margin, confidence=conf)
            self._order[key] = list(ranking.names)
            confirmed = (
                self._coarse_ok([(x.a, x.b) for x in ranking.pairs], st, alpha)
                if p.check_2q
                else [True] * len(ranking.pairs)
            )
            for pair, ok_2q in zip(ranking.pairs, confirmed, strict=True):
                pk = frozenset((pair.a, pair.b))
                self._latest["pair:" + "|".join(sorted(pk))] = {
                    "welch_p": pair.welch_p, "welch_p_holm": pair.welch_p_holm,
                    "tost_p": pair.tost_p, "rel": pair.relative_difference,
                }  # fmt: skip
                if pair.verdict == UNDECIDED:
                    continue
                if pair.verdict == SEPARATED and not ok_2q:
                    continue  # not confirmed by the subsessions of 2q (§3 robustness)
                old = self._verdicts.get(pk)
                new = {"a": pair.a, "b": pair.b, "verdict": pair.verdict, "look": look,
                       "alpha": alpha, "welch_p_holm": pair.welch_p_holm, "tost_p": pair.tost_p,
                       "relative_difference": pair.relative_difference}  # fmt: skip
                if old is None:
                    self._verdicts[pk] = new
                    events.append(Event("pair-verdict", self._verdict_text(new), new))
                elif (
                    old["verdict"] == SEPARATED and pair.verdict == SEPARATED and old["a"] != pair.a
                ):
                    self._verdicts[pk] = new
                    events.append(Event(
                        "pair-revised",
                        f"{pair.a} and {pair.b} were separated in the other order at look "
                        f"{old['look']}; look {look} separates them this way", new,
                    ))  # fmt: skip
        events.extend(self._look_baselines(st, rounds, alpha, look))
        where = "final look (budget)" if final else f"look {look}"
        events.insert(0, Event(
            "look",
            f"{where} after {clock} rounds: tests at alpha {alpha:.3g} "
            f"(spent {self._spent:.3g} of {p.alpha:g})",
            {"look": look, "clock": clock, "alpha": alpha, "spent": self._spent,
             "final": final, "state": self.state()},
        ))  # fmt: skip
        return events

    def _coarse_ok(
        self, pairs: Sequence[tuple[str, str]], st: Mapping[str, WorkloadStats | None],
        alpha: float, fixed: Mapping[str, _Side] | None = None,
    ) -> list[bool]:  # fmt: skip
        """Do the separations (a better than b) hold with subsessions of 2q? (§3 robustness,
        :func:`stats.sequential.confirm_separations`); ``fixed``: stored sides by label."""

        def coarse(n: str) -> Sample | None:
            if fixed is not None and n in fixed:
                return fixed[n].sample
            x = st.get(n)
            if x is None or x.n_2q is None or x.s2_2q is None or x.mean_2q is None:
                return None
            return Sample(x.mean_2q, x.s2_2q, x.n_2q)

        sides = [(coarse(a), coarse(b)) for a, b in pairs]
        usable = [i for i, (x, y) in enumerate(sides) if x is not None and y is not None]
        lower = [
            (self.direction.get(pairs[i][0]) or self.direction[pairs[i][1]]) == "lower_is_better"
            for i in usable
        ]
        ok = confirm_separations([sides[i] for i in usable], alpha, lower)  # type: ignore[misc]
        out = [False] * len(pairs)
        for i, v in zip(usable, ok, strict=True):
            out[i] = v
        return out

    def _baseline_side(self, label: str, st: Mapping[str, WorkloadStats | None],
                       rounds: Mapping[str, int], name: str) -> _Side | None:  # fmt: skip
        if label == "@stored":
            return self.baseline[name]
        s = st.get(label)
        return self._side(s, rounds[label]) if self._enough(s, rounds[label]) else None

    def _look_baselines(
        self, st: Mapping[str, WorkloadStats | None], rounds: Mapping[str, int],
        alpha: float, look: int,
    ) -> list[Event]:  # fmt: skip
        """Test every baseline comparison at level ``alpha`` (Holm over them); record verdicts."""
        todo = []
        for name, label in self._baseline_pairs():
            s, base = st.get(name), self._baseline_side(label, st, rounds, name)
            if base is not None and self._enough(s, rounds[name]):
                todo.append((name, label, self._side(s, rounds[name]), base))
        if not todo:
            return []
        lower = [self.direction[name] == "lower_is_better" for name, *_ in todo]
        results = baseline_tests(
            [(cur.sample, base.sample) for _, _, cur, base in todo],
            alpha,
            self.params.margin,
            lower,
        )
        events = []
        for (name, label, _cur, base), r in zip(todo, results, strict=True):
            self._latest["base:" + name] = {
                "welch_p": r.welch_p, "welch_p_holm": r.welch_p_holm, "tost_p": r.tost_p,
            }  # fmt: skip
            if name in self._base_verdicts or r.verdict == UNDECIDED:
                continue
            if r.verdict in ("slower", "faster") and self.params.check_2q:
                pair = (label, name) if r.verdict == "slower" else (name, label)
                fixed = {label: base} if label == "@stored" else None
                if not self._coarse_ok([pair], st, alpha / len(todo), fixed)[0]:
                    continue  # not confirmed with subsessions of 2q (§3)
            rec = {"name": name, "baseline": label, "verdict": r.verdict, "look": look,
                   "alpha": alpha, "relative_change": r.relative_change,
                   "welch_p_holm": r.welch_p_holm, "tost_p": r.tost_p}  # fmt: skip
            self._base_verdicts[name] = rec
            base_name = "its stored baseline" if label == "@stored" else label
            events.append(Event(
                "baseline-verdict",
                f"{name} vs {base_name}: {r.verdict} ({_fmt_pct(r.relative_change)}; Holm p "
                f"{r.welch_p_holm:.3g}, TOST p {r.tost_p:.3g}, level {alpha:.3g} at look {look})",
                rec,
            ))  # fmt: skip
        return events

    def _verdict_text(self, v: Mapping[str, Any]) -> str:
        if v["verdict"] == SEPARATED:
            what = f"{v['a']} is better than {v['b']} ({_fmt_pct(v['relative_difference'])} apart; Holm p {v['welch_p_holm']:.3g})"
        else:
            what = (
                f"{v['a']} and {v['b']} are equivalent within {_fmt_pct(self.params.margin)} "
                f"(TOST p {v['tost_p']:.3g})"
            )
        return f"{what} at look {v['look']}, level {v['alpha']:.3g}"

    def _alpha_estimate(self) -> float:
        """Level a pair will likely be tested at: the next look's α (else α/K from now)."""
        p = self.params
        if self._plan is not None:
            nxt = self._last_point + 1
            if nxt < self._plan.n_looks:
                return max(self._plan_cum(nxt) - self._spent, 1e-12)
            return max(self._remaining(), 1e-12)
        return p.alpha / len(
            look_schedule(p.min_rounds, max(p.max_rounds, p.min_rounds + 1), p.look_ratio)
        )

    # ------------------------------------------------------------------ status
    def _own(self, name: str, s: WorkloadStats | None, r: int) -> tuple[list[str], int | None]:
        """(unmet own conditions as text, estimated more rounds) of one workload."""
        p = self.params
        unmet: list[str] = []
        need: list[int] = []
        if r < p.min_rounds:
            unmet.append(f"{r} of min_rounds {p.min_rounds} steady rounds")
            need.append(p.min_rounds - r)
        if s is None or s.mean is None:
            unmet.append("no steady readings yet")
            need.append(max(1, p.subsessions - r))
        elif not s.enough:
            more = s.rounds_needed
            unmet.append(
                f"not enough data for its correlation time (tau {max(s.tau, 1.0):.3g} readings) yet, "
                f"about {more} more rounds" if s.tau is not None
                else f"not enough data yet, about {more} more rounds"
            )  # fmt: skip
            if more is not None:
                need.append(more)
        elif s.n < p.min_series:
            per_round = s.n / max(1, s.rounds)
            more = max(1, math.ceil((p.min_series - s.n) / per_round))
            unmet.append(f"{s.n} of min_series {p.min_series} readings, about {more} more rounds")
            need.append(more)
        elif (s.n_q or 0) < p.subsessions:
            unmet.append(f"{s.n_q} of min_subsessions {p.subsessions} subsession means")
            need.append(math.ceil(r * (p.subsessions / max(1, s.n_q or 1) - 1)) + 1)
        if p.ci_rel_width is not None and not self._width_ok(s):
            if s is not None and s.rel_half_width is not None and s.enough:
                more = max(1, math.ceil(r * ((s.rel_half_width / p.ci_rel_width) ** 2 - 1)))
                unmet.append(
                    f"CI half-width {_fmt_pct(s.rel_half_width)} > target "
                    f"{_fmt_pct(p.ci_rel_width)}, about {more} more rounds"
                )
                need.append(more)
            elif s is not None and s.enough:
                unmet.append("mean is 0: the relative CI width is undefined")
        return unmet, (max(need) if need else None)

    def _pair_need(
        self, a: str, b: str | None, sa: _Side | None, sb: _Side | None,
        rounds: Mapping[str, int], k: int,
    ) -> tuple[dict[str, float], int | None, str]:  # fmt: skip
        """Shares of the remaining uncertainty per live side, rounds needed, note."""
        p = self.params
        if sa is None or sb is None:
            return {}, None, "waiting for enough data on both sides"
        live = {}
        for name, side in ((a, sa), (b, sb)):
            if name is not None and side.rounds and not self._out(name, rounds):
                live[name] = side.var / side.n / side.rounds
        total = sum(live.values())
        shares = {n: (u / total if total > 0 else 1.0 / len(live)) for n, u in live.items()}
        alpha = self._alpha_estimate()
        fixed = (sa.rounds == 0, sb.rounds == 0)
        sep = growth_needed(sa.sample, sb.sample, p.margin, alpha / max(1, k - 1), fixed=fixed)[0]
        eq = growth_needed(sa.sample, sb.sample, p.margin, alpha, fixed=fixed)[1]
        options = [f for f in (sep, eq) if f is not None]
        if not options:
            return (
                shares,
                None,
                "no number of rounds can decide it (a stored side is too imprecise)",
            )
        f = min(options)
        r_max = max(s.rounds for s in (sa, sb))
        more = math.ceil(r_max * (f - 1.0))
        nxt = self._next_look()
        clock = max(rounds.values())
        if nxt is not None:
            more = max(more, nxt - clock)
        return shares, max(more, 0), ""

    def _status(
        self,
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        enough: Mapping[str, bool],
        realloc: bool,
    ) -> dict[str, Any]:
        """Every workload's, pair's and baseline's status, the active set and unmet list.

        Rounds for undecided pairs go to the sides that hold >= ``allocation_share`` of the
        pair's remaining uncertainty, chosen at a look and kept until the next one (or until
        a chosen side runs out of budget), so allocation does not flap between looks.
        """
        p = self.params
        can_test = self._plan is None or self._remaining() > 0
        if self._pair_active is not None and any(self._out(n, rounds) for n in self._pair_active):
            realloc = True
        pair_active: dict[str, bool] = {n: False for n in self.names}
        waiting: dict[str, list[str]] = {n: [] for n in self.names}
        pair_more: dict[str, int] = {}
        unmet_pairs: list[str] = []
        side = {n: (self._side(st[n], rounds[n]) if enough[n] else None) for n in self.names}

        def enlist(
            names: Sequence[str], what: str, shares: Mapping[str, float], more: int | None
        ) -> None:
            """Record that ``names`` wait for the undecided comparison ``what``; those
            holding enough of its remaining uncertainty get rounds, unless no number of
            rounds can decide it (``more`` None)."""
            for n in names:
                waiting[n].append(what)
                if can_test and more is not None and shares.get(n, 0.0) >= share_min:
                    pair_active[n] = True
                    pair_more[n] = max(pair_more.get(n, 0), more)

        share_min = p.allocation_share - 1e-12
        pairs: list[PairStatus] = []
        for key, members in self._groups().items():
            order = self._order.get(key)
            if order is None or set(order) != set(members):
                order = sorted(members, key=lambda n: self._sort_key(n, st[n]))
            k = len(order)
            for a, b in zip(order, order[1:], strict=False):
                pk = frozenset((a, b))
                rec = self._verdicts.get(pk)
                latest = self._latest.get("pair:" + "|".join(sorted(pk)), {})
                if rec is not None:
                    pairs.append(PairStatus(
                        rec["a"], rec["b"], rec["verdict"], rec["look"], rec["alpha"],
                        latest.get("welch_p"), rec["welch_p_holm"], rec["tost_p"],
                        rec["relative_difference"], None,
                    ))  # fmt: skip
                    continue
                shares, more, note = self._pair_need(a, b, side[a], side[b], rounds, k)
                enlist((a, b), f"{a}~{b}", shares, more)
                pairs.append(PairStatus(
                    a, b, UNDECIDED, None, None, latest.get("welch_p"),
                    latest.get("welch_p_holm"), latest.get("tost_p"), latest.get("rel"), more,
                ))  # fmt: skip
                detail = (
                    f"Holm p {latest['welch_p_holm']:.3g}, TOST p {latest['tost_p']:.3g} at the last look"
                    if latest else note or "not tested yet"
                )  # fmt: skip
                est = f", about {more} more rounds" if more is not None else ""
                unmet_pairs.append(f"pair {a}~{b} undecided ({detail}{est})")
        baselines: list[BaselineStatus] = []
        for name, label in self._baseline_pairs():
            base = self._baseline_side(label, st, rounds, name)
            s = st[name]
            rec = self._base_verdicts.get(name)
            latest = self._latest.get("base:" + name, {})
            base_mean = (
                base.mean if base is not None else (st[label].mean if st.get(label) else None)
            )
            cur_mean = s.mean if s is not None else None
            rel = (
                (cur_mean - base_mean) / abs(base_mean)
                if cur_mean is not None and base_mean not in (None, 0) else None
            )  # fmt: skip
            label_text = "stored baseline" if label == "@stored" else label
            if rec is not None:
                baselines.append(BaselineStatus(
                    name, label_text, rec["verdict"], rec["look"], rec["alpha"], cur_mean,
                    base_mean if base_mean is not None else float("nan"), rec["relative_change"],
                    latest.get("welch_p"), rec["welch_p_holm"], rec["tost_p"], None,
                ))  # fmt: skip
                continue
            shares, more, note = self._pair_need(
                name, None if label == "@stored" else label, side[name], base, rounds, 2
            )
            sides = (name,) if label == "@stored" else (name, label)
            enlist(sides, f"{name} vs {label_text}", shares, more)
            verdict = UNDECIDED if side[name] is not None else "no data"
            notes = (note,) if note else ()
            baselines.append(BaselineStatus(
                name, label_text, verdict, None, None, cur_mean,
                base_mean if base_mean is not None else float("nan"), rel,
                latest.get("welch_p"), latest.get("welch_p_holm"), latest.get("tost_p"), more, notes,
            ))  # fmt: skip
            est = (
                f", about {more} more rounds"
                if more is not None
                else (f" ({note})" if note else "")
            )
            unmet_pairs.append(f"{name} vs {label_text} undecided{est}")
        if realloc or self._pair_active is None:
            self._pair_active = {n for n, v in pair_active.items() if v}
        pair_active = {n: n in self._pair_active and bool(waiting[n]) for n in self.names}
        workloads: dict[str, WorkloadStatus] = {}
        active: list[str] = []
        unmet_own: list[str] = []
        for n in self.names:
            s, r = st[n], rounds[n]
            own, own_more = self._own(n, s, r)
            exhausted = self._out(n, rounds)
            done = not own and not waiting[n]
            is_active = not exhausted and (bool(own) or pair_active[n])
            if is_active:
                active.append(n)
            unmet_own.extend(f"{n}: {u}" for u in own)
            more = max([v for v in (own_more, pair_more.get(n)) if v is not None], default=None)
            workloads[n] = WorkloadStatus(
                n, r, s.n if s else 0, s.q if s else None, s.n_q if s else None,
                s.mean if s else None, s.ci_low if s else None, s.ci_high if s else None,
                s.rel_half_width if s else None, p.ci_rel_width, enough[n], self._width_ok(s),
                done, is_active, exhausted, None if done else more, tuple(own), tuple(waiting[n]),
            )  # fmt: skip
        return {
            "workloads": workloads,
            "pairs": pairs,
            "baselines": baselines,
            "active": active,
            "all_done": all(w.done for w in workloads.values()),
            "unmet": unmet_own + unmet_pairs,
            "can_test": can_test,
        }

    def _sort_key(self, name: str, s: WorkloadStats | None) -> tuple[int, float]:
        if s is None or s.mean is None:
            return (1, 0.0)
        sign = 1.0 if self.direction[name] == "lower_is_better" else -1.0
        return (0, sign * s.mean)

    # ------------------------------------------------------------------ reason, events
    def _reason(
        self, status: Mapping[str, Any], rounds: Mapping[str, int], time_out: bool,
        elapsed: float, budget: bool = False, unmet_before: Sequence[str] = (),
    ) -> str:  # fmt: skip
        """One line: all conditions met, the budget that ended the campaign and what was
        unmet, or what the campaign still waits for. A budget stop never reads "met", even
        when the final look then decided every pair (it says so)."""
        p = self.params
        clock = max(rounds.values())
        unmet = status["unmet"]
        if budget and status["all_done"]:
            unmet = [f"{u} (before the final look, which then decided every pair)"
                     for u in unmet_before]  # fmt: skip
        if status["all_done"] and not budget:
            pairs = status["pairs"]
            n_sep = sum(1 for x in pairs if x.verdict == SEPARATED)
            n_eq = sum(1 for x in pairs if x.verdict == EQUIVALENT)
            width = (
                f" and CI half-width <= {_fmt_pct(p.ci_rel_width)}"
                if p.ci_rel_width is not None
                else ""
            )
            text = f"all conditions met after {clock} rounds: every workload has enough data{width}"
            if pairs:
                text += f"; {len(pairs)} adjacent pair(s) decided ({n_sep} separated, {n_eq} equivalent within {_fmt_pct(p.margin)})"
            if status["baselines"]:
                text += "; baseline comparisons decided"
            return text
        listing = "; ".join(unmet) if unmet else "nothing left that more rounds can decide"
        if time_out:
            return f"max_time {p.max_time:g} s reached after {elapsed:.0f} s; unmet: {listing}"
        if not status["active"]:
            out = [n for n in self.names if rounds[n] >= p.max_rounds]
            gone = [f"{n} ({why})" for n, why in self._retired.items()]
            if gone:
                listing = f"stopped: {', '.join(gone)}; {listing}"
            if out:
                return f"max_rounds {p.max_rounds} reached ({', '.join(out)}); unmet: {listing}"
            if not status["can_test"]:
                return f"alpha {p.alpha:g} spent at the final look; unmet: {listing}"
            return f"no workload can make progress; unmet: {listing}"
        nxt = self._next_look()
        at = f"; next look after {nxt} rounds" if nxt is not None else ""
        shown = "; ".join(unmet[:4]) + (f"; and {len(unmet) - 4} more" if len(unmet) > 4 else "")
        return f"continue: {shown}{at}"

    def _changes(
        self, status: Mapping[str, Any], stop: bool, reason: str, early: bool
    ) -> list[Event]:
        """Events for what changed since the last call: data first (``early``, listed before
        any look of this call), then done/reopened workloads, allocation and the stop."""
        prev = self._prev
        events: list[Event] = []
        wl: Mapping[str, WorkloadStatus] = status["workloads"]
        if early:
            for n, w in wl.items():
                was = prev.get("enough", {}).get(n, False)
                if w.enough and not was:
                    msg = (
                        f"{n}: enough data (q = {w.q}, {w.n_q} subsession means of {w.n} readings)"
                    )
                    events.append(
                        Event("enough-data", msg, {"workload": n, "q": w.q, "n_q": w.n_q})
                    )
                elif was and not w.enough:
                    msg = f"{n}: no longer enough data ({'; '.join(w.unmet)})"
                    events.append(Event("not-enough-data", msg, {"workload": n}))
            prev["enough"] = {n: w.enough for n, w in wl.items()}
            return events
        for n, w in wl.items():
            was_done = prev.get("done", {}).get(n, False)
            if w.done and not was_done:
                msg = f"{n}: done after {w.rounds} rounds (CI half-width {_fmt_pct(w.rel_half_width)})"
                events.append(Event("workload-done", msg, {"workload": n, "rounds": w.rounds}))
            elif was_done and not w.done:
                why = "; ".join(list(w.unmet) + [f"{x} undecided" for x in w.waiting_for])
                msg = f"{n}: needs more data again ({why})"
                events.append(Event("workload-reopened", msg, {"workload": n}))
        active = [] if stop else list(status["active"])
        if not stop and active != prev.get("active"):
            idle = [n for n in self.names if n not in active]
            msg = f"rounds go to {', '.join(active)}" + (
                f" (not {', '.join(idle)})" if idle else ""
            )
            events.append(Event("allocation", msg, {"active": active}))
        if stop and not prev.get("stopped"):
            events.append(Event("stop", reason, {"state": self.state()}))
        prev["done"] = {n: w.done for n, w in wl.items()}
        prev["active"] = active
        prev["stopped"] = stop
        return events
