"""The rules of :mod:`tierwise.memory.scrub`: each a name, a kind and a scan yielding spans.

Our own regexes with their checks (assignments, prose passwords, credential pairs, emails, IBANs,
cards, phones, PEM private keys), then the detectors of :mod:`tierwise.memory.scrub_detectors`
(bc-detect-secrets' plugins, token prefixes, keyword assignments, command lines, high entropy), in
the order they run; :data:`NEEDLES` lists, per rule, the lower-case strings one of which every
match holds, so a text without them is not scanned for that rule (ARCHITECTURE decision 76).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tierwise.memory.scrub_detectors import DETECTORS, trim
from tierwise.memory.scrub_numbers import card as _card
from tierwise.memory.scrub_numbers import card_short as _card_short
from tierwise.memory.scrub_numbers import iban as _iban

__all__ = ["KINDS", "NEEDLES", "RULES", "Rule", "Span"]

#: Every finding kind, in the order rules run; each becomes the placeholder ``[kind]``.
KINDS = ("private-key", "jwt", "api-key", "token", "password", "email", "iban", "card", "phone")

Span = tuple[int, int]


Scan = Callable[[str], Iterator[Span]]
Check = Callable[[str, "re.Match[str]"], "Span | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule: its name (for audit logs), the kind it finds, and its scan of a text for spans."""

    name: str
    kind: str
    scan: Scan


def _regex(name: str, kind: str, pattern: str, check: Check | None = None, group: int = 0) -> Rule:
    compiled = re.compile(pattern)

    def scan(text: str) -> Iterator[Span]:
        for match in compiled.finditer(text):
            span = check(text, match) if check is not None else match.span(group)
            if span is not None and span[0] < span[1]:
                yield span

    return Rule(name, kind, scan)


# -- checks -----------------------------------------------------------------------------------------

_PLACEHOLDERS = frozenset(f"[{kind}]" for kind in KINDS)
# Unquoted values that are words, types or names rather than secrets (``password: str``, ``pwd=pwd``).
_NOT_SECRETS = frozenset(
    re.findall(
        r"\S+",
        "null none nil true false undefined redacted <redacted> yes no the a an to of for is are and or not "
        "if in on str string bytes int bool dict list any optional required self this password passwd pwd "
        "secret passphrase token key",
    )
)


# Values that are code, not secrets: attributes, snake_case names (``api_key=self.api_key``,
# ``secret=secret_string``, ``password = proxy_auth``).
_CODE_NAME = re.compile(
    r"(?:self|cls|this)\.\w++|[a-z]++(?:_[a-z]++)++|[A-Z]++(?:_[A-Z]++)++|\w*+[_.](?i:api_?key|passw\w*|secret\w*)"
)


_PROSE_SECRET = re.compile(r"secret[ \t]*+:[ \t]")
# A call or an index: ``getpass()``, ``os.environ["PW"]``, ``input("pw: ")`` (not ``Ab(12)cd!9``).
_CALL = re.compile(r"[a-z_][\w.]*+(?:\(.*\)|\[.*\])[.,;]*+\Z|[a-z_][\w.]*+[(\[]\Z")


def _value(text: str, match: re.Match[str]) -> Span | None:
    """Span of the first group that matched, unless it is a placeholder or an obvious non-secret."""
    for group in range(1, (match.re.groups or 0) + 1):
        if match.group(group) is not None:
            value = match.group(group)
            lowered = value.lower()
            if value in _PLACEHOLDERS or lowered in _NOT_SECRETS or set(value) <= {"*", "x", "X", "."}:
                return None
            if value.startswith(("$", "%", "{{", "os.", "env.", "process.env")):
                return None  # a reference to a secret (env var, template), not the secret
            if group != 3:
                return match.span(group)
            start, end = match.span(group)
            end = trim(text, start, end)  # sentence punctuation after an unquoted value stays
            value = text[start:end]
            if _PROSE_SECRET.match(match.group()) and value.isalpha():
                return None  # ``the secret: consistency`` is prose
            code = _CODE_NAME.fullmatch(value) or _CALL.match(value)
            if not value or value.lower() in _NOT_SECRETS or code:
                return None  # code: ``password = getpass(...)``, ``api_key=self.api_key``
            return (start, end)
    return None


def _random_run(text: str, match: re.Match[str]) -> Span | None:
    """An ``sk-`` key needs a 16-character alphanumeric run (``sk-learn-style-words`` is no key)."""
    return match.span() if re.search(r"[A-Za-z0-9]{16}", match.group()) else None


def _random(text: str, match: re.Match[str]) -> Span | None:
    """A token's body mixes cases or letters and digits (``glpat-xxxxxxxxxxxxxxxxxxxx`` is a sample)."""
    body = match.group(1)
    classes = any(c.islower() for c in body) + any(c.isupper() for c in body) + any(c.isdigit() for c in body)
    return match.span() if classes > 1 else None


def _mixed(text: str, match: re.Match[str]) -> Span | None:
    """A bearer token has a digit or mixed case (``Bearer tokens-are-great`` is prose)."""
    token = match.group(1)
    if any(c.isdigit() for c in token) or (token.lower() != token and token.upper() != token):
        return match.span(1)
    return None


_COMPOUND = re.compile(r"\d*+[A-Za-z]++(?:['-][A-Za-z]++)++")  # 2FA-protected, case-sensitive, don't


def _looks_secret(value: str) -> bool:
    """Not a word: mixes letters with digits or symbols, or capitals inside (``hunter2``, ``sEcret``)."""
    if len(value) < 4 or value.lower() in _NOT_SECRETS or _COMPOUND.fullmatch(value):
        return False
    return not value.isalpha() or (value[1:].lower() != value[1:] and value.upper() != value)


def _secret(prose: bool) -> Check:
    """A value said in prose or passed as a flag: quoted, after ``=``, or not a plain word.

    Sentence punctuation after an unquoted value stays (``my password is hunter2.``).
    """

    def check(text: str, match: re.Match[str]) -> Span | None:
        span = _value(text, match)
        if span is None or match.group(3) is None:
            return span
        start, end = span
        value = text[start:end].rstrip(".,;:?)")
        spaced = text[start - 1] in " \t"
        if not value or ((prose or spaced) and not _looks_secret(value)):
            return None
        return (start, start + len(value))

    return check


_VERSION = re.compile(r"[vV]?\d++(?:[._+-]\w++)++")
_INNER_DIGIT = re.compile(r"[A-Za-z]\d++[A-Za-z]")


def _credential(text: str, match: re.Match[str]) -> Span | None:
    """The password of ``user / password``: lower case and two of upper case, digits, symbols.

    Without a symbol a digit must sit between letters (``Passw0rd``): ``Gen2``, ``iPhone15``,
    ``Covid-19`` are names; ``_`` is a name's. A closing ``!`` does not count (``Yes / No!``).
    """
    value = match.group(1).rstrip(".,;:?)")
    core = value.rstrip("!")
    symbol = any(c in "!@#$%^&*=+?~|" for c in core)
    classes = symbol + any(c.isupper() for c in core) + any(c.isdigit() for c in core)
    stem = core.removesuffix("s")  # MP3s: an acronym's plural has no lower case of its own
    if len(core) < 4 or classes < 2 or stem.upper() == stem or _VERSION.fullmatch(core):
        return None
    if not symbol and not _INNER_DIGIT.search(core):
        return None
    return (match.start(1), match.start(1) + len(value))


_URL_USER = re.compile(r"://[^/\s:@]{1,64}:[^/\s@]*+\Z")


def _email(text: str, match: re.Match[str]) -> Span | None:
    """Not the ``password@host`` of a URL's ``user:password@host`` (that is a password)."""
    return None if _URL_USER.search(text, max(0, match.start() - 70), match.start()) else match.span()


_DATE_IN_NUMBER = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}")


def _phone(low: int, high: int) -> Check:
    def check(text: str, match: re.Match[str]) -> Span | None:
        raw = match.group()
        digits = sum(c.isdigit() for c in raw)
        if not low <= digits <= high or _DATE_IN_NUMBER.search(raw):
            return None
        return match.span()

    return check


# A phone word just before a number written without separators: ``call me at``, ``my number is``,
# ``tel:``, ``"phone": "`` (an order, account or ticket number is no phone number).
_PHONE_CUE = re.compile(
    r"(?i:\b(?:tel|telephone|phone|ph|mobile|mob|cell|cellphone|fax|whatsapp|sms|call|called|calling|ring"
    r"|dial|text|texted|reach|contact)\b|\b(?:my|his|her|your|our|their|new|home|work|office|contact)"
    r"[ \t]++(?:(?:phone|mobile|cell|home|work|office|landline|(?-i:[A-Z]{2,3}))[ \t]++)?(?:number|no|nr)\b)"
    r"""(?:[ \t:.=#"'(-]|\b(?i:me|us|him|her|them|at|on|is|was|number|no|nr|num|back|directly|now)\b)*+\Z"""
)


def _phone_context(text: str, match: re.Match[str]) -> Span | None:
    """A separator-less number is a phone number only after a phone word (``call 5551234567``)."""
    return match.span() if _PHONE_CUE.search(text, max(0, match.start() - 64), match.start()) else None


# -- private keys -----------------------------------------------------------------------------------

_PEM_MARK = re.compile(r"-----(BEGIN|END) ((?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?)-----")
# A key cut off before its END line: base64 lines and ``Name: value`` headers, newline-led
# (real or JSON-escaped ``\n``).
_PEM_BODY = re.compile(r"(?:(?:\r?\n|\\r?\\n)[ \t]*+(?:[A-Za-z0-9+/=]++|[A-Za-z-]++:[^\r\n\\]*+))*+")


def _scan_pem(text: str) -> Iterator[Span]:
    marks = list(_PEM_MARK.finditer(text))
    for i, mark in enumerate(marks):
        if mark.group(1) != "BEGIN":
            continue
        after = marks[i + 1] if i + 1 < len(marks) else None
        if after is not None and after.group(1) == "END" and after.group(2) == mark.group(2):
            yield (mark.start(), after.end())
        else:
            body = _PEM_BODY.match(text, mark.end())
            yield (mark.start(), body.end() if body else mark.end())


# -- rules ------------------------------------------------------------------------------------------

_B = r"(?<![\w-])"  # token start: not inside a word or a dashed name
_NAME = r"(?<![\w:-])"  # name start: not inside a word, a dashed name or an ARN
_NUM_START = r"(?<![\w.,/$€£#+-])"  # number start: not inside a number, price, path or id
_NUM_END = r"(?![\w/]|[.,:-]\d)"  # number end: not followed by more of a number
# A value is taken whole, whatever symbols it holds and however long: quoted, or up to a space.
_VALUE = r"""(?:"([^"\r\n]++)"|'([^'\r\n]++)'|([^\s"'`<>(\[{=,;&][^\s"`]*+))"""
# A value in prose or a command line: quoted, or up to a space, comma or semicolon.
_PROSE_VALUE = r"""(?:"([^"\r\n]++)"|'([^'\r\n]++)'|([^\s"'`,;<>(\[{][^\s"'`]*+))"""
_ASSIGN = r"""["']?[ \t]*+[:=][ \t]*+"""
# A secret's name: any prefix (``DB_``, ``client_``, ``db``), the keyword, a known suffix (``_key``).
_AFFIXED = r"\w{0,30}?(?:%s)(?:[_-](?:access[_-])?(?:key|value|token|str|string|plain(?:text)?|input|b64))?"

_PASSWORD_NAMES = r"passw(?:or)?d|pwd|passphrase|secret"
_TOKEN_NAMES = r"(?:access|auth|refresh|session)_?token"


def _assigned(names: str) -> str:
    """``<name> = <value>`` / ``"<name>": "<value>"`` for a secret's name; the value is a group."""
    return _NAME + f"(?i:{_AFFIXED % names})" + _ASSIGN + _VALUE


# fmt: off
_RULES: tuple[Rule, ...] = (
    Rule("pem", "private-key", _scan_pem),
    _regex("jwt", "jwt", _B + r"eyJ[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+"),
    _regex("anthropic", "api-key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}+"),
    _regex("openai", "api-key", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}+", _random_run),
    _regex("aws-key-id", "api-key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _regex("aws-secret", "api-key", r"(?i:aws_?secret_?(?:access_?)?key)" + _ASSIGN
           + r"""["']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])""", group=1),
    _regex("google", "api-key", _B + r"AIza[0-9A-Za-z_-]{35}(?![\w-])"),
    _regex("stripe", "api-key", _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}+"),
    _regex("github", "token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+)"),
    _regex("slack", "token", _B + r"xox[abprs]-[A-Za-z0-9-]{10,}+"),
    _regex("huggingface", "token", _B + r"(?:hf_|api_org_)([A-Za-z0-9]{30,}+)(?![\w-])", _random),
    _regex("gitlab", "token", _B + r"gl(?:pat|dt|rt|ptt|ft|soat|oas)-([A-Za-z0-9_-]{20,}+)"
           r"(?:\.[A-Za-z0-9]{2,}+){0,2}(?![\w-]|\.\w)", _random),
    _regex("sendgrid", "api-key", r"(?<![\w.-])SG\.[A-Za-z0-9_-]{16,32}+\.[A-Za-z0-9_-]{16,64}+"
           r"(?![\w-]|\.\w)"),
    _regex("bearer", "token", r"(?i:\bbearer)\s++([A-Za-z0-9._~+/-]{16,}+=*+)", _mixed),
    _regex("api-key-assignment", "api-key", _assigned("api_?key"), _value),
    _regex("token-assignment", "token", _assigned(_TOKEN_NAMES), _value),
    _regex("password-assignment", "password", _assigned(_PASSWORD_NAMES), _value),
    _regex("url-password", "password", r"(?<=://)[^/\s:@]{1,64}:([^/\s\"']{1,512})@(?![^/\s]*@)", _value),
    _regex("password-prose", "password", _B + r"(?i:passw(?:or)?d|pwd|pw|passphrase|passcode)(?:[ \t]++"
           r"(?i:for|to|of|on)(?:[ \t]++[\w.@'-]{1,30}+){1,3}?)?(?:[ \t]++(?i:is|was)(?:[ \t]*+:)?[ \t]++"
           r"|(?<=(?i:pw))[ \t]*+[:=][ \t]*+)" + _PROSE_VALUE, _secret(prose=True)),
    _regex("password-flag", "password", r"(?<![\w-])--(?i:(?!no-)(?:[a-z0-9]{1,20}+-){0,3}?(?:"
           + _PASSWORD_NAMES + r"|pass))(?:=|[ \t]++(?!-))" + _PROSE_VALUE, _secret(prose=False)),
    _regex("credential-pair", "password", r"(?<![\w/.@+:-])[A-Za-z][\w.@+-]{0,63}+[ \t]++/[ \t]++"
           r"([^\s/\\\"'`<>()\[\]{}]{4,64}+)(?![\w/])", _credential),
    _regex("email", "email", r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}+@"
           r"(?:[A-Za-z0-9-]{1,63}+\.){1,8}(?:xn--[A-Za-z0-9-]{1,59}+|[A-Za-z]{2,24}+)(?![A-Za-z0-9_-])",
           _email),
    _regex("iban", "iban", r"(?<![A-Za-z0-9])(?:[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}+|[a-z]{2}\d{2}"
           r"(?: ?[a-z0-9]){11,30}+)", _iban),
    _regex("card", "card", _NUM_START + r"[2-6]\d{3}(?:([ -])\d{3,6}+(?:\1\d{3,6}+){1,4}|\d{9,15}+)"
           r"(?![\w]|[.,]\d)", _card),
    _regex("card-short", "card", _NUM_START + r"(?:3(?:0[0-5]|[689]\d)\d{11}|1\d{14})" + _NUM_END,
           _card_short),
    _regex("phone-intl", "phone", r"(?<![\w+])\+[1-9]\d{0,2}(?:[ .-]?\(\d{1,4}\))?[ .-]?\d{1,14}+"
           r"(?:[ .-]\d{2,14}+| \d(?= \d)){0,6}" + _NUM_END, _phone(7, 15)),
    _regex("phone-paren", "phone", r"(?<![\w(])\((?:0\d{1,4}|[2-9]\d{2})\)[ .-]?\d{3,4}[ .-]?\d{3,4}"
           + _NUM_END, _phone(7, 15)),
    _regex("phone-nanp", "phone", _NUM_START + r"(?:1([-. ]))?[2-9]\d{2}(?(1)\1|([-. ]))\d{3}(?:\1|\2)\d{4}"
           + _NUM_END),
    _regex("phone-trunk", "phone", _NUM_START + r"0[1-9]\d{0,3}[ -]\d{3,4}[ -]?\d{3,5}" + _NUM_END,
           _phone(9, 12)),
    _regex("phone-fr", "phone", _NUM_START + r"0[1-9]([ .])\d{2}(?:\1\d{2}){3}" + _NUM_END),
    _regex("phone-plain", "phone", _NUM_START + r"(?!20\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))"
           r"(?:1?[2-9][0-8]\d{8}|1[3-9]\d{9}|0[1-9]\d{8,9})(?!\.\w)" + _NUM_END,
           _phone_context),
)
# fmt: on
# What every match of a rule contains, lower-cased: an ASCII text (where ignoring case is plain)
# with none of them is not scanned for that rule. Only a necessary condition, never a guess; a rule
# not listed always runs.
_DIGITS = tuple("0123456789")
# fmt: off
_NEEDLES: dict[str, tuple[str, ...]] = {
    "pem": ("-----",), "jwt": ("eyj",), "anthropic": ("sk-ant-",), "openai": ("sk-",),
    "aws-key-id": ("akia", "asia"), "aws-secret": ("aws",), "google": ("aiza",),
    "stripe": ("_live_", "_test_"), "github": ("gh", "github_pat_"), "slack": ("xox",),
    "huggingface": ("hf_", "api_org_"), "gitlab": ("gl",), "sendgrid": ("sg.",), "bearer": ("bearer",),
    "api-key-assignment": ("apikey", "api_key"), "token-assignment": ("token",),
    "password-assignment": ("pass", "pwd", "secret"), "url-password": ("://",),
    "password-prose": ("pass", "pw"), "password-flag": ("--",), "credential-pair": ("/",),
    "email": ("@",), "iban": _DIGITS, "card": _DIGITS, "card-short": _DIGITS, "phone-intl": ("+",),
    "phone-paren": ("(",),
    "phone-nanp": _DIGITS, "phone-trunk": ("0",), "phone-fr": ("0",), "phone-plain": _DIGITS,
}
# fmt: on
# bc-detect-secrets' vendor plugins, token prefixes, keyword assignments, command lines and high
# entropy (scrub_detectors.py), after our own rules: on the same span, ours name the kind.
_RULES += tuple(Rule(name, kind, scan) for name, kind, scan, _ in DETECTORS)
_NEEDLES.update({name: needles for name, _, _, needles in DETECTORS})
#: Every rule, in the order it runs.
RULES = _RULES
#: Per rule name, strings (lower-case) one of which every match holds.
NEEDLES = _NEEDLES
