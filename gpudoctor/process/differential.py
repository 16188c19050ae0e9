"""Environment differential: did the user's environment make a step fail, and which part of it?

A step that failed in the user's environment F is rerun once in a clean base B (:func:`clean_base`).
If it passes there, the differences between F and B are the candidates ("deltas"): each variable F
sets or changes, and, for a variable whose value is a path list (PATH, LD_LIBRARY_PATH, CPATH, any
``/a:/b`` value), each entry on its own. Delta debugging (Zeller's ddmin, k-ary: the candidates are
split into up to :data:`CHUNKS` parts whose reruns run at once) finds the smallest set of deltas that,
added to B, makes the step fail again: one culprit among ~50 deltas costs two rounds. The answer is
then checked on the user's own environment: F without the culprits must pass ("verified"), which is
exactly the fix a user would paste (``unset X`` / ``export LD_LIBRARY_PATH=<without that entry>``).

Nothing here knows a variable by name: the clean base is the only list (:data:`BASE_KEPT`), and the
step decides what passing means. A healthy check never gets here (callers run :func:`explain_failure`
only after a failure), and every rerun is a :func:`gpudoctor.process.subproc.run` under the check's
budget: the differential stops when the budget, its own ``max_seconds`` or ``max_reruns`` runs out and
says so (``stopped``).

Values may be secrets: a variable whose name or value looks like a credential (:func:`looks_secret`)
is never split into entries and its value never appears in the facts, only its name.

Usage (``step(env) -> True | False | None``; None: the rerun said nothing, e.g. it timed out)::

    facts["differential"] = explain_failure(command_step([nvcc, "--version"], timeout=10), env,
                                            label="nvcc --version", paths=[nvcc])
"""
from __future__ import annotations

import os
import re
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from gpudoctor.process import scratch, subproc

#: PATH of the clean base: the FHS system directories, as login(1) and sudo's secure_path set them, so a
#: step still finds the system's own tools (gcc, as, ld) and a tool it was given by absolute path runs.
BASE_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

#: The only variables the clean base copies from the user's environment, and why. None of them says how
#: a compiler, loader or CUDA library behaves; all of them say who and where the user is, so a rerun
#: without them would fail for reasons of its own. TMPDIR is deliberately NOT here: nvcc and gcc write
#: their intermediates there, so a missing, full or noexec TMPDIR is a cause to find (without it: /tmp).
BASE_KEPT = {
    "HOME": "the user's home: tools keep per-user state there and some refuse to start without it",
    "USER": "the user's name, as programs look it up (getlogin fallbacks)",
    "LOGNAME": "the user's name, as POSIX programs look it up",
    "LANG": "the user's locale: the language of the step's messages, which a rerun should read like theirs",
    "LC_ALL": "the user's locale override (as LANG)",
    "TERM": "the terminal type: only the colour of diagnostics, never what a tool builds or loads",
}

#: Parts the candidates of one round are split into (each part and its complement are rerun at once).
CHUNKS = 8
#: Reruns at once, whatever the core count (each is a process and a thread here: a shell limit on memory or
#: threads must leave room for them, and 16 nvcc builds at once cost more than they save).
MAX_WORKERS = 8
#: Ceiling of one differential (seconds) outside a check; in a check, half of what is left of its budget
#: (`--timeout 30`: ~13 s; `--timeout 120` on a slow machine: ~55 s), so the rest of the check keeps its time.
MAX_SECONDS = 15.0
MAX_RERUNS = 256  # a bound on CPU spent; time is bounded by max_seconds and the budget

_SECRET_NAME = re.compile(r"TOKEN|KEY|PASSW|PASSPHRASE|SECRET|CREDENTIAL|AUTH|COOKIE", re.I)
_URL_USERINFO = re.compile(r"\w+://[^/\s:@]+:[^/\s@]+@")
_TOKENISH = re.compile(r"[A-Za-z0-9_\-+=.]{20,}")
# Identifiers with a documented public format, shown although random-looking: an RFC 9562 UUID (8-4-4-4-12
# hex), as NVIDIA prefixes it (GPU-<uuid>, MIG-<uuid>; before R470 MIG-GPU-<uuid>/<GI>/<CI>, per the
# CUDA_VISIBLE_DEVICES docs), or a device index; a comma-separated list of these (CUDA_VISIBLE_DEVICES).
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_PUBLIC_ID = re.compile(rf"(?:GPU-|MIG-(?:GPU-)?)?{_UUID}(?:/\d+/\d+)?|\d+")


def is_public_identifier(value: str) -> bool:
    """True for a value made only of UUID-shaped identifiers (``GPU-6f92...``, ``MIG-...``, a bare UUID) and
    device indices, comma-separated, with at least one UUID: an address of a thing, not a credential."""
    items = [x.strip() for x in (value or "").split(",")]
    return all(_PUBLIC_ID.fullmatch(x) for x in items) and any(not x.isdigit() for x in items)


def looks_secret(name: str, value: str) -> bool:
    """True when a variable's name (TOKEN, KEY, PASSWORD, SECRET, ...) or value (a URL with a password, a
    long random-looking string of letters and digits without a path separator) looks like a credential.
    A value of public identifiers (:func:`is_public_identifier`) is shown, unless the name says credential
    (some services issue UUID-shaped API keys: the name decides first)."""
    if _SECRET_NAME.search(name) or _URL_USERINFO.search(value or ""):
        return True
    v = value or ""
    if is_public_identifier(v):
        return False
    classes = sum(bool(re.search(rx, v)) for rx in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return bool(_TOKENISH.fullmatch(v)) and classes >= 2 and not v.replace(".", "").isdigit()


def is_path_list(value: str) -> bool:
    """A value like ``/a/bin:/b/bin`` or ``:/x`` (an empty entry means the current directory): every
    non-empty entry is a path (``/``, ``.`` or ``~``), and there is a separator."""
    if os.pathsep not in value:
        return False
    entries = [e for e in value.split(os.pathsep) if e]
    return bool(entries) and all(e[0] in "/.~" for e in entries)


def clean_base(env: Mapping[str, str]) -> Dict[str, str]:
    """B: PATH = :data:`BASE_PATH`, plus the :data:`BASE_KEPT` variables ``env`` sets, with its values."""
    base = {k: env[k] for k in BASE_KEPT if k in env}
    base["PATH"] = os.pathsep.join(BASE_PATH)
    return base


@dataclass(frozen=True)
class Delta:
    """One difference of F from B: a whole variable (``index`` -1: F's value) or one path-list entry
    (``entry`` at ``index`` of F's value)."""

    var: str
    value: str
    index: int = -1
    entry: Optional[str] = None

    def public(self) -> dict:
        """The JSON shape the report shows: ``{"var", "value"}``, ``{"var", "entry"}`` or ``{"var", "secret": True}``."""
        if self.entry is not None:
            return {"var": self.var, "entry": self.entry}
        if looks_secret(self.var, self.value):
            return {"var": self.var, "secret": True}
        return {"var": self.var, "value": self.value}


def deltas(env: Mapping[str, str], base: Mapping[str, str]) -> List[Delta]:
    """Every difference of ``env`` from ``base``, in ``env``'s order; path lists split into entries."""
    out = []
    for var, value in env.items():
        if base.get(var) == value:
            continue
        if is_path_list(value) and not looks_secret(var, value):
            common = set((base.get(var) or "").split(os.pathsep)) if var in base else set()
            for i, entry in enumerate(value.split(os.pathsep)):
                if entry not in common or entry == "":
                    out.append(Delta(var, value, i, entry))
        else:
            out.append(Delta(var, value))
    return out


def compose(env: Mapping[str, str], base: Mapping[str, str], chosen) -> Dict[str, str]:
    """B with the ``chosen`` deltas of F (``env``) applied. A path list keeps F's order: F's entries
    that B has too or that are chosen, then B's entries F lacks."""
    out = dict(base)
    chosen = set(chosen)
    by_var: Dict[str, List[Delta]] = {}
    for d in chosen:
        by_var.setdefault(d.var, []).append(d)
    for var, value in env.items():
        if base.get(var) == value:
            continue
        if is_path_list(value) and not looks_secret(var, value):
            picked = {d.index for d in by_var.get(var, ())}
            common = set((base.get(var) or "").split(os.pathsep)) if var in base else set()
            mine = value.split(os.pathsep)
            keep = [e for i, e in enumerate(mine) if i in picked or (e in common and e != "")]
            keep += [e for e in (base.get(var) or "").split(os.pathsep) if var in base and e not in mine]
            if keep:
                out[var] = os.pathsep.join(keep)
            else:
                out.pop(var, None)
        elif var in by_var:
            out[var] = value
    return out


def without(env: Mapping[str, str], base: Mapping[str, str], culprits: Sequence[Delta]) -> Dict[str, str]:
    """F with the culprits taken out (what the fix leaves): a variable goes back to B's value or is
    unset, an entry is dropped from its list (the variable is unset when none is left)."""
    out = dict(env)
    drop: Dict[str, set] = {}
    for d in culprits:
        if d.entry is None:
            if d.var in base:
                out[d.var] = base[d.var]
            else:
                out.pop(d.var, None)
        else:
            drop.setdefault(d.var, set()).add(d.index)
    for var, idx in drop.items():
        keep = [e for i, e in enumerate(env[var].split(os.pathsep)) if i not in idx]
        if keep:
            out[var] = os.pathsep.join(keep)
        else:
            out.pop(var, None)
    return out


def fix_of(env: Mapping[str, str], fixed: Mapping[str, str]) -> dict:
    """``{"unset": [names], "set": {name: value}}``: the shell edits that turn ``env`` into ``fixed``."""
    unset = sorted(k for k in env if k not in fixed)
    changed = {k: fixed[k] for k in sorted(fixed) if env.get(k) != fixed[k]}
    return {"unset": unset, "set": changed}


def _split(items: list, n: int) -> List[list]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


class _Round:
    """The reruns of one ddmin round, so the round can stop them once it has its answer (a failing part)."""

    def __init__(self) -> None:
        self.cancelled = False
        self._started: list = []
        self._lock = threading.Lock()

    def add(self, started) -> bool:
        with self._lock:
            if not self.cancelled:
                self._started.append(started)
                return True
        return False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            started = list(self._started)
        for s in started:
            if s.proc is not None and s.proc.poll() is None:
                subproc._kill_group(s.proc)


_local = threading.local()  # the round a worker thread's rerun belongs to (see command_step)


class _Runner:
    """Reruns of one differential: memoised per delta set, concurrent, counted, stopped by the limits."""

    def __init__(self, step, env, base, max_seconds, max_reruns, workers):
        self.step, self.env, self.base = step, env, base
        self.t0 = time.monotonic()
        self.max_seconds, self.max_reruns, self.workers = max_seconds, max_reruns, workers
        self.reruns, self.rounds, self.stopped = 0, 0, None
        self.longest = 0.0
        self.memo: Dict[frozenset, Optional[bool]] = {}
        self.gate_env: Optional[dict] = None  # the clean base, rerun with the first round (see round)
        self.gate: Optional[bool] = None
        self.verified: Dict[int, Optional[bool]] = {}  # this round's verifications, by part
        self.verified_sets: Dict[frozenset, Optional[bool]] = {}  # culprit set -> the user's env without it passed
        self._lock = threading.Lock()

    def _one(self, env, rnd: Optional[_Round] = None) -> Optional[bool]:
        if rnd is not None and rnd.cancelled:
            return None
        with self._lock:
            self.reruns += 1
        t = time.monotonic()
        _local.round = rnd
        try:
            ok = self.step(env)
        except Exception:  # noqa: BLE001 - a step that raised said nothing about the environment
            ok = None
        finally:
            _local.round = None
        if rnd is not None and rnd.cancelled:
            return None  # stopped by the round: says nothing
        self.longest = max(self.longest, time.monotonic() - t)
        return ok

    def can_go_on(self) -> bool:
        """False (with ``stopped`` set) when another round would not fit the limits."""
        if self.stopped:
            return False
        spent = time.monotonic() - self.t0
        b = subproc._current
        if b is not None and (b.expired or b.remaining() - subproc.GRACE < self.longest):
            self.stopped = f"the check's {b.seconds:g} s budget (--timeout) ran out"
        elif spent + self.longest > self.max_seconds:
            self.stopped = f"the differential's {self.max_seconds:.1f} s limit ran out"
        elif self.reruns >= self.max_reruns:
            self.stopped = f"the differential's {self.max_reruns} reruns were spent"
        return self.stopped is None

    def passes(self, env) -> Optional[bool]:
        """One rerun in ``env`` (a whole environment), a round of its own."""
        self.rounds += 1
        return self._one(env)

    def round(self, parts: List[frozenset], complements: List[frozenset], verify: Optional[Dict[int, dict]] = None) -> tuple:
        """Rerun B + each part and B + each complement at once, with the clean base itself while its answer
        is pending (``gate_env``: a rerun saved when the base passes) and, when the parts are single deltas,
        the user's environment without each (``verify``: part index -> env; the verification saved).
        ``(kind, i)``: ("gate", None) when the base did not pass; the first part that fails ("part", taken as
        soon as it and its verification answered; the round's other reruns are stopped); else a complement
        that fails once every part passed ("complement"); else ``(None, None)``."""
        self.rounds += 1
        rnd = _Round()
        jobs = []
        if self.gate_env is not None:
            jobs.append((("gate", None), self.gate_env))
        jobs += [(("part", i), compose(self.env, self.base, g)) for i, g in enumerate(parts) if g not in self.memo]
        jobs += [(("verify", i), e) for i, e in (verify or {}).items()]
        jobs += [(("complement", i), compose(self.env, self.base, g)) for i, g in enumerate(complements) if g not in self.memo]
        group = {("part", i): g for i, g in enumerate(parts)}
        group.update({("complement", i): g for i, g in enumerate(complements)})
        answers: Dict[tuple, Optional[bool]] = {}
        pool = ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(jobs) or 1)))
        try:
            futs = {pool.submit(self._one, e, rnd): key for key, e in jobs}
            pending = set(futs)
            while True:
                if self.gate_env is not None and ("gate", None) in answers:
                    self.gate, self.gate_env = answers[("gate", None)], None
                if self.gate is not True and self.gate_env is None:
                    return "gate", None
                if self.gate_env is None:
                    fail_part = next((i for i, g in enumerate(parts) if self.memo.get(g)), None)
                    if fail_part is not None and ("verify", fail_part) not in answers and \
                            any(futs[f] == ("verify", fail_part) for f in pending):
                        pass  # its verification is still running: worth the wait, it saves a rerun
                    elif fail_part is not None:
                        return "part", fail_part
                    elif all(g in self.memo for g in parts):
                        fail_c = next((i for i, g in enumerate(complements) if self.memo.get(g)), None)
                        if fail_c is not None:
                            return "complement", fail_c
                        if all(g in self.memo for g in complements):
                            return None, None
                if not pending:
                    return None, None
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    key, result = futs[f], f.result()
                    answers[key] = result
                    if key[0] == "verify":
                        self.verified[key[1]] = result
                    elif key in group:
                        if result is not None:
                            self.memo[group[key]] = not result
                        else:
                            self.memo.setdefault(group[key], None)
        finally:
            rnd.cancel()
            pool.shutdown(wait=True, cancel_futures=True)


def _ddmin(run: _Runner, candidates: List[Delta], chunks: int, prior: Sequence[Delta] = ()) -> tuple:
    """(a failing subset of ``candidates``, whether it is 1-minimal): k-ary ddmin from a failing set.
    ``prior``: culprits already found (a round of single deltas verifies ``prior`` + each of them at once)."""
    c = list(candidates)
    n = min(chunks, len(c))
    while len(c) >= 2:
        if not run.can_go_on():
            return c, False
        n = max(2, min(n, len(c)))
        parts = [frozenset(p) for p in _split(c, n)]
        complements = [frozenset(c) - p for p in parts] if n > 2 else []  # with 2 parts, each is the other's
        singles = n == len(c)
        run.verified = {}
        verify = {i: without(run.env, run.base, list(prior) + list(p)) for i, p in enumerate(parts)} if singles else None
        kind, i = run.round(parts, complements, verify)
        if kind == "gate":
            return [], False
        if kind == "part":
            c = [d for d in c if d in parts[i]]
            n = chunks
            if i in run.verified:
                run.verified_sets[frozenset(list(prior) + c)] = run.verified[i]
        elif kind == "complement":
            c = [d for d in c if d in complements[i]]
            n = max(n - 1, 2)
        elif n < len(c):
            n = min(2 * n, len(c))
        else:
            break
    return c, True


def explain_failure(step: Callable[[Mapping[str, str]], Optional[bool]], env: Mapping[str, str], label: str,
                    paths: Sequence[str] = (), command: Optional[str] = None, max_seconds: Optional[float] = None,
                    max_reruns: int = MAX_RERUNS, chunks: Optional[int] = None, workers: Optional[int] = None) -> dict:
    """See :func:`_explain_failure`. The differential is an extra: when this process cannot run it (a shell
    limit that leaves no room for its threads or children: "can't start new thread", EAGAIN, ENOMEM), it says
    so in its facts and the step's own facts stay whole."""
    try:
        return _explain_failure(step, env, label, paths, command, max_seconds, max_reruns, chunks, workers)
    except (RuntimeError, OSError, MemoryError) as exc:
        return {"step": label, "paths": [p for p in paths if p], "command": command, "clean_base_passes": None,
                "culprits": [], "verified": None, "stopped": f"could not rerun the step: {exc}"[:300]}


def _explain_failure(step, env, label, paths=(), command=None, max_seconds=None, max_reruns=MAX_RERUNS,
                     chunks=None, workers=None) -> dict:
    """Rerun a step that failed in ``env`` (F) in the clean base, and if it passes there, find and verify
    the deltas that make it fail. Call it only after the step failed (and not for a timeout: each rerun
    would cost the same wait). Returns JSON-able facts::

        {"step": label, "paths": [...], "command": ..., "clean_base_passes": bool | None, "deltas": n,
         "culprits": [{"var", "value"} | {"var", "entry"} | {"var", "secret": True}], "minimal": bool,
         "verified": bool | None, "fix": {"unset": [...], "set": {...}}, "reruns": n, "rounds": n,
         "seconds": s, "stopped": why (only when a limit cut it short), "base": {"PATH", "kept": [...]}}

    ``clean_base_passes`` None: the rerun in B said nothing (timed out, budget). ``culprits`` is empty
    unless the base passes. ``workers`` (reruns at once) defaults to the CPU count (at least 2), ``chunks``
    (parts per round) to half of it, at most :data:`CHUNKS`."""
    env = dict(env)
    base = clean_base(env)
    workers = workers or min(MAX_WORKERS, max(2, os.cpu_count() or 2))
    # k parts and their k complements run at once: k = half the workers (2 on a 2-core machine: bisection)
    chunks = chunks or min(CHUNKS, max(2, workers // 2))
    if max_seconds is None:
        b = subproc._current
        max_seconds = b.remaining() / 2 if b is not None else MAX_SECONDS
    run = _Runner(step, env, base, max_seconds, max_reruns, workers)
    cands = deltas(env, base)
    out = {"step": label, "paths": [p for p in paths if p], "command": command,
           "base": {"PATH": base["PATH"], "kept": sorted(k for k in base if k != "PATH")},
           "deltas": len(cands), "culprits": [], "verified": None}
    # The clean base is rerun with the first round of the search: when it passes (the only case that
    # goes on) that round is already done. With no delta, F is the clean base, and it failed.
    culprits: List[Delta] = []
    remaining, minimal, verified = list(cands), True, None
    if not cands:
        passed = False
    else:
        run.gate_env = compose(env, base, ())
        found, minimal_here = _ddmin(run, remaining, max(2, chunks))
        if run.gate_env is not None:  # a single delta: no round ran
            run.gate, run.gate_env = run.passes(run.gate_env), None
        passed = run.gate
        if passed:
            for attempt in range(3):  # independent breakers: after one is found, look for the next in what is left
                if attempt:
                    if not run.can_go_on():
                        break
                    found, minimal_here = _ddmin(run, remaining, max(2, chunks), prior=culprits)
                culprits += found
                minimal = minimal and minimal_here
                remaining = [d for d in remaining if d not in found]
                key = frozenset(culprits)
                if key in run.verified_sets and run.verified_sets[key] is not None:
                    verified = run.verified_sets[key]  # verified in the search's last round
                elif run.can_go_on():
                    verified = run.passes(without(env, base, culprits))
                else:
                    verified = None
                    break
                if verified is not False or not remaining or not minimal_here:  # passed, or the rerun said nothing
                    break
    out["clean_base_passes"] = passed
    if passed:
        run.memo[frozenset()] = False
        out.update(culprits=[d.public() for d in culprits], minimal=minimal, verified=verified,
                   fix=_redacted_fix(fix_of(env, without(env, base, culprits)), env))
    out.update(reruns=run.reruns, rounds=run.rounds, seconds=round(time.monotonic() - run.t0, 3))
    if run.stopped:
        out["stopped"] = run.stopped
    return out


def _redacted_fix(fix: dict, env: Mapping[str, str]) -> dict:
    """A fix never exports a secret-looking variable's value (it is only ever unset or split: see deltas)."""
    fix["set"] = {k: v for k, v in fix["set"].items() if not looks_secret(k, env.get(k, ""))}
    return fix


def worth_rerunning(result: subproc.CommandResult) -> bool:
    """Whether a failed command's failure may come from its environment and is cheap to rerun: it ran
    and failed (non-zero exit, a signal, or output that meant failure), it did not hang or run out of budget."""
    return not result.timed_out and not (result.returncode is None and result.error)


def command_step(argv: Sequence[str], timeout: float, passed: Optional[Callable] = None,
                 in_temp_dir: bool = False, files: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                 env_for: Optional[Callable[[Mapping[str, str]], Mapping[str, str]]] = None) -> Callable:
    """A step for :func:`explain_failure` that runs ``argv`` with :func:`subproc.run` (its timeout, the
    check's budget). ``passed(result) -> bool`` (default: exit code 0); a rerun that timed out or was cut
    by the budget counts as unknown (None). ``in_temp_dir``: each rerun in a fresh temporary directory
    (for commands that write outputs, e.g. ``nvcc ... -o smoke``), holding ``files`` (name -> text) for
    its inputs. ``env_for`` adds what the caller
    always adds to the environment (e.g. :func:`subproc.lean_context_env`)."""
    judge = passed or (lambda r: r.ok)

    def step(env):
        full = env_for(env) if env_for else env
        b = subproc._current
        if b is not None and (b.expired or b.remaining() <= subproc.GRACE):
            return None
        tmp = scratch.make("gpudoctor-differential-") if in_temp_dir else None
        try:
            for name, text in (files or {}).items():
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as fh:
                    fh.write(text)
            started = subproc.start(list(argv), env=full, cwd=tmp or cwd)
            rnd = getattr(_local, "round", None)
            if rnd is not None and not rnd.add(started):
                started.kill()
                return None
            r = started.wait(timeout)
        finally:
            if tmp:
                scratch.remove(tmp)
        if r.timed_out or (rnd is not None and rnd.cancelled):
            return None
        return bool(judge(r))

    return step
