"""The options of a send, checked before anything goes out.

Python callers name options in snake_case with Python values (seconds or
``timedelta`` for durations, aware ``datetime`` for instants); the wire
(``POST /api/v1/tasks``, docs/tasks.md) takes camelCase fields in
milliseconds and ISO 8601 text. ``check_options`` refuses a bad option with
a ``TypeError`` (wrong kind of value) or ``ValueError`` (out of range) that
names it, with the server's own bounds, so a mistake costs no round trip
and sends nothing. ``to_wire`` turns checked options into fields.

``None`` means "not set" for every option but ``retention_class_key``,
where it is the seed's explicit None: keep the record forever (the wire's
``null``). Leave that option out to get the queue's mapping.
"""

import datetime as _dt
import math
import numbers

__all__ = ["OPTION_NAMES", "check_options", "check_name", "to_wire", "iso_time"]

MAX_DELAY_MS = 366 * 86_400_000        # the server's bound on delayMs ("a year at most")
MAX_TIMEOUT_MS = 86_400_000            # timeoutMs: 1 ms to 24 h
MAX_RETRY_DELAY_MS = 86_400_000        # each retry delay, backoff base and cap
MAX_RETRIES = 20
MAX_DELAYS = 20
MAX_RETRY_CODES = 16
MAX_CODE_CHARS = 64
MAX_KEY_CHARS = 200                    # idempotencyKey
MAX_NAME_BYTES = 255                   # the one limit of names (docs/api.md)

OPTION_NAMES = ("queue", "priority", "delay", "run_at", "good_until", "timeout", "retry",
                "idempotency_key", "retention_class_key", "unique", "rate_key")

_RETRY_FIELDS = ("maxRetries", "delaysMs", "backoff", "jitter", "retryOn")
_BACKOFF_FIELDS = ("baseMs", "capMs")
_UNIQUE_FIELDS = ("key", "byArgs", "forMs", "while", "onConflict")


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _int_in(name, v, low, high):
    if not _is_int(v):
        raise TypeError(f"{name} must be an integer from {low} to {high}, not {v!r}")
    if not low <= v <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, not {v}")
    return int(v)


def _seconds(name, v):
    """A duration given as seconds (int or float) or a timedelta, in seconds."""
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if _is_number(v) and math.isfinite(v):
        return float(v)
    raise TypeError(f"{name} must be a number of seconds or a timedelta, not {v!r}")


def check_name(name, v):
    """A task or queue name: a non-empty string within the one name limit."""
    if not isinstance(v, str) or not v:
        raise TypeError(f"{name} must be a non-empty string, not {v!r}")
    if len(v.encode()) > MAX_NAME_BYTES:
        raise ValueError(f"{name} is longer than {MAX_NAME_BYTES} bytes")
    return v


def iso_time(name, v):
    """An instant as the server reads it: UTC with milliseconds and Z."""
    if isinstance(v, str):
        try:
            v = _dt.datetime.fromisoformat(v)
        except ValueError:
            raise ValueError(f"{name} must be an ISO 8601 time, not {v!r}") from None
    if not isinstance(v, _dt.datetime):
        raise TypeError(f"{name} must be a datetime, not {v!r}")
    if v.tzinfo is None:   # a naive time is ambiguous (local? UTC?): refuse rather than guess
        raise ValueError(f"{name} must be timezone-aware (e.g. datetime.now(timezone.utc))")
    return v.astimezone(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_delay(v):
    seconds = _seconds("delay", v)
    ms = round(seconds * 1000)
    if ms < 0 or ms > MAX_DELAY_MS:
        raise ValueError(f"delay must be from 0 to 366 days, not {seconds} s")
    return v


def _check_timeout(v):
    seconds = _seconds("timeout", v)
    if not 1 <= round(seconds * 1000) <= MAX_TIMEOUT_MS:
        raise ValueError(f"timeout must be from 0.001 s to 86400 s (24 h), not {seconds} s")
    return v


def _check_good_until(v):
    if isinstance(v, _dt.timedelta):
        if v.total_seconds() <= 0:
            raise ValueError("good_until as a timedelta must be positive (how long from the send)")
        return v
    iso_time("good_until", v)
    return v


def _check_key(v):
    if not isinstance(v, str) or not v:
        raise TypeError(f"idempotency_key must be a non-empty string, not {v!r}")
    if len(v) > MAX_KEY_CHARS:
        raise ValueError(f"idempotency_key must be at most {MAX_KEY_CHARS} characters")
    return v


def _check_rate_key(v):
    """rate_key: the key the queue's rate_limit_per_key counts separately."""
    if not isinstance(v, str) or not v:
        raise TypeError(f"rate_key must be a non-empty string, not {v!r}")
    if len(v.encode()) > MAX_NAME_BYTES:
        raise ValueError(f"rate_key must be at most {MAX_NAME_BYTES} bytes")
    return v


def _check_unique(v):
    """unique: the server's object as is (docs/tasks.md, "Uniqueness"):
    ``{"key": ...} | {"byArgs": True}``, ``"forMs"`` or ``"while": "live"``,
    ``"onConflict"``. Its members are known here; their rules are the
    server's (a 400 naming the member)."""
    _check_known("unique", v, _UNIQUE_FIELDS)
    return dict(v)


def _check_class(v):
    if v is not None and (not isinstance(v, str) or not v):
        raise TypeError(f"retention_class_key must be a retention class key or None (forever), not {v!r}")
    return v


def _check_known(what, obj, known):
    if not isinstance(obj, dict):
        raise TypeError(f"{what} must be a dict, not {obj!r}")
    for key in obj:
        if key not in known:
            raise ValueError(f"{what}: unknown field {key!r} (known: {', '.join(known)})")


def _check_delays(v):
    if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= MAX_DELAYS:
        raise TypeError(f"retry.delaysMs must be a list of 1 to {MAX_DELAYS} integers")
    for ms in v:
        _int_in("retry.delaysMs[...]", ms, 0, MAX_RETRY_DELAY_MS)


def _check_backoff(b):
    _check_known("retry.backoff", b, _BACKOFF_FIELDS)
    if "baseMs" not in b:
        raise ValueError("retry.backoff.baseMs is required")
    base = _int_in("retry.backoff.baseMs", b["baseMs"], 1, MAX_RETRY_DELAY_MS)
    if b.get("capMs") is not None and _int_in("retry.backoff.capMs", b["capMs"], 1, MAX_RETRY_DELAY_MS) < base:
        raise ValueError("retry.backoff.capMs must be at least baseMs")


def _check_retry_on(v):
    if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= MAX_RETRY_CODES:
        raise TypeError(f"retry.retryOn must be a list of 1 to {MAX_RETRY_CODES} error codes")
    for code in v:
        if not isinstance(code, str) or not 1 <= len(code) <= MAX_CODE_CHARS:
            raise ValueError(f"retry.retryOn must hold non-empty strings of at most {MAX_CODE_CHARS} characters")


def _check_retry(r):
    """The retry policy, in the wire's own shape (docs/tasks.md)."""
    _check_known("retry", r, _RETRY_FIELDS)
    if r.get("maxRetries") is not None:
        _int_in("retry.maxRetries", r["maxRetries"], 0, MAX_RETRIES)
    if r.get("delaysMs") is not None:
        _check_delays(r["delaysMs"])
    if r.get("backoff") is not None:
        if r.get("delaysMs") is not None:
            raise ValueError("retry.backoff and retry.delaysMs cannot both be given")
        _check_backoff(r["backoff"])
    jitter = r.get("jitter")
    if jitter is not None and not (_is_number(jitter) and 0 <= jitter <= 1):
        raise ValueError(f"retry.jitter must be a number from 0 to 1, not {jitter!r}")
    if r.get("retryOn") is not None:
        _check_retry_on(r["retryOn"])
    return r


_CHECKS = {
    "queue": lambda v: check_name("queue", v),
    "priority": lambda v: _int_in("priority", v, 1, 100),
    "delay": _check_delay,
    "run_at": lambda v: (iso_time("run_at", v), v)[1],
    "good_until": _check_good_until,
    "timeout": _check_timeout,
    "retry": _check_retry,
    "idempotency_key": _check_key,
    "retention_class_key": _check_class,
    "unique": _check_unique,
    "rate_key": _check_rate_key,
}


def check_options(options):
    """Checks options (a dict of option name to value); returns the ones
    set, in a new dict. Raises TypeError/ValueError naming the option."""
    checked = {}
    for name, value in options.items():
        if name not in _CHECKS:
            raise TypeError(f"unknown option {name!r} (options: {', '.join(OPTION_NAMES)})")
        if value is None and name != "retention_class_key":
            continue   # None: not set (the server's default)
        checked[name] = _CHECKS[name](value)
    if "delay" in checked and "run_at" in checked:
        raise ValueError("delay and run_at cannot both be given")
    return checked


def _ms(name, v):
    return round(_seconds(name, v) * 1000)


def to_wire(options, now=None):
    """Checked options as fields of POST /api/v1/tasks. ``good_until`` given
    as a timedelta counts from ``now`` (the send)."""
    wire = {}
    if "queue" in options:
        wire["queue"] = options["queue"]
    if "priority" in options:
        wire["priority"] = options["priority"]
    if "delay" in options:
        wire["delayMs"] = _ms("delay", options["delay"])
    if "run_at" in options:
        wire["runAt"] = iso_time("run_at", options["run_at"])
    if "good_until" in options:
        until = options["good_until"]
        if isinstance(until, _dt.timedelta):
            until = (now or _dt.datetime.now(_dt.timezone.utc)) + until
        wire["goodUntil"] = iso_time("good_until", until)
    if "timeout" in options:
        wire["timeoutMs"] = _ms("timeout", options["timeout"])
    if "retry" in options:
        wire["retry"] = options["retry"]
    if "idempotency_key" in options:
        wire["idempotencyKey"] = options["idempotency_key"]
    if "retention_class_key" in options:
        wire["retentionClassKey"] = options["retention_class_key"]
    if "unique" in options:
        wire["unique"] = options["unique"]
    if "rate_key" in options:
        wire["rateKey"] = options["rate_key"]
    return wire
