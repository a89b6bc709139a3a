"""Secret detectors for :mod:`tierwise.memory.scrub`, on bc-detect-secrets (ARCHITECTURE decision 76).

Six kinds of scan, each a function from text to ``(start, end)`` spans of the secret value:

- **Vendor detectors**: the regex plugins of ``bc-detect-secrets`` (Bridgecrew's maintained fork of
  Yelp's detect-secrets; AWS, Artifactory, Azure storage, Cloudant, Discord, GitHub, IBM, JWT,
  Mailchimp, npm, SendGrid, Slack, SoftLayer, Square, Stripe, Twilio), built once at import and run
  through their compiled ``denylist`` on the text itself (no file, no filename, no network).
- **Token prefixes** the plugins lack (Shopify ``shpat_``, PyPI ``pypi-AgEI…``, DigitalOcean
  ``dop_v1_``, Slack ``xapp-``, Sentry ``sntryu_`` … modelled on gitleaks' rules): a prefix and a
  random body of the vendor's length.
- **Keyword assignments** on detect-secrets' keyword list (``api_key``, ``token``, ``secret``,
  ``password`` … with any prefix or suffix: ``stripeToken``, ``ADOBE_CLIENT_SECRET``) in every
  written form chat text carries: ``name = value``, ``name: value``, ``"name": "value"``,
  ``export NAME=value``, ``<nameToken>value``, ``name := value``. The value is masked whole,
  whatever symbols it holds and however long; a value that reads as a word or as code is kept.
- **Command lines**: ``curl -u user:password``, ``mysql -pSECRET``, ``Authorization: Basic …``.
- **Prose**: a secret's name, then within three words a generated value of 16+ characters
  (``the api key 3f9a…``), or after a password's word one mixing letters, digits and symbols.
- **High entropy**: an unquoted run of 24+ base64 characters mixing upper, lower case and digits
  whose Shannon entropy (detect-secrets' ``calculate_shannon_entropy``) is near the maximum for its
  length; only as a last resort, with nothing else said about it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.high_entropy_strings import calculate_shannon_entropy
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import ALLOWLIST as _NOT_NAMES
from detect_secrets.plugins.keyword import DENYLIST as _KEYWORDS
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = ["DETECTORS", "Detector", "looks_random", "placeholder", "trim"]

Span = tuple[int, int]
#: (rule name, kind, scan, needles): the needles are lower-case strings one of which every match holds.
Detector = tuple[str, str, Callable[[str], Iterator[Span]], tuple[str, ...]]

# -- vendor plugins ---------------------------------------------------------------------------------

_PLUGINS: tuple[tuple[type[RegexBasedDetector], str, tuple[str, ...]], ...] = (
    (AWSKeyDetector, "api-key", ("a3t", "akia", "asia", "abia", "acca", "aws")),
    (ArtifactoryDetector, "api-key", ("akc", "ap")),
    (AzureStorageKeyDetector, "api-key", ("accountkey", "account_key", "account key")),
    (CloudantDetector, "password", ("cloudant", "cl")),
    (DiscordBotTokenDetector, "token", (".",)),
    (GitHubTokenDetector, "token", ("gh",)),
    (IbmCloudIamDetector, "api-key", ("ibm",)),
    (IbmCosHmacDetector, "api-key", ("secret",)),
    (JwtTokenDetector, "jwt", ("eyj",)),
    (MailchimpDetector, "api-key", ("-us",)),
    (NpmDetector, "token", ("npm", "_authtoken")),
    (SendGridDetector, "api-key", ("sg.",)),
    (SlackDetector, "token", ("xox", "hooks.slack.com")),
    (SoftlayerDetector, "api-key", ("softlayer", "sl")),
    (SquareOAuthDetector, "api-key", ("sq0csp-",)),
    (StripeDetector, "api-key", ("_live_",)),
    (TwilioKeyDetector, "api-key", ("ac", "sk")),
)
_EDGE = " \t\r\n=:\"'`,;"


def _plugin_scan(plugin: RegexBasedDetector) -> Callable[[str], Iterator[Span]]:
    patterns = tuple(plugin.denylist)

    def scan(text: str) -> Iterator[Span]:
        for pattern in patterns:
            for match in pattern.finditer(text):
                groups = [g for g in range(1, pattern.groups + 1) if match.group(g)]
                start, end = match.span(groups[0]) if groups else match.span()
                while start < end and text[start] in _EDGE:
                    start += 1
                while end > start and text[end - 1] in _EDGE:
                    end -= 1
                if end - start >= 8:
                    yield (start, end)

    return scan


# -- token prefixes ---------------------------------------------------------------------------------

# (prefix, body characters, shortest body): vendor formats the plugins above do not know.
_PREFIXES: tuple[tuple[str, str, int], ...] = (
    ("shpat_", "hex", 32),
    ("shpss_", "hex", 32),
    ("shpca_", "hex", 32),
    ("shppa_", "hex", 32),
    ("pypi-AgEIcHlwaS5vcmc", "ext", 50),
    ("dop_v1_", "hex", 64),
    ("doo_v1_", "hex", 64),
    ("dor_v1_", "hex", 64),
    ("xapp-", "ext", 30),
    ("xoxe.xox", "ext", 100),
    ("xoxe-", "ext", 100),
    ("sntryu_", "hex", 64),
    ("sntrys_", "b64", 60),
    ("glcbt-", "ext", 20),
    ("glffct-", "ext", 20),
    ("glimt-", "ext", 25),
    ("glagent-", "ext", 50),
    ("gloas-", "ext", 64),
    ("glsoat-", "ext", 20),
    ("GR1348941", "ext", 20),
    ("glrtr-", "ext", 20),
    ("dapi", "hex", 32),
    ("dp.pt.", "alnum", 40),
    ("dp.ct.", "alnum", 40),
    ("dp.st.", "ext", 40),
    ("dp.sa.", "alnum", 40),
    ("dp.scim.", "alnum", 40),
    ("dp.audit.", "alnum", 40),
    ("dt0c01.", "ext", 80),
    ("EZAK", "alnum", 54),
    ("EZTK", "alnum", 54),
    ("FLWSECK_TEST-", "ext", 12),
    ("FLWPUBK_TEST-", "ext", 32),
    ("FLWSECK-", "ext", 12),
    ("fo1_", "ext", 43),
    ("fm2_", "b64", 100),
    ("fio-u-", "ext", 64),
    ("LTAI", "alnum", 20),
    ("p8e-", "alnum", 32),
    ("AKCp", "alnum", 60),
    ("cmVmd", "alnum", 59),
    ("4b1d", "alnum", 38),
    ("CLOJARS_", "alnum", 60),
    ("AGE-SECRET-KEY-1", "upper", 58),
    ("ops_eyJ", "b64", 200),
    ("ABSK", "b64", 100),
    ("duffel_test_", "ext", 43),
    ("duffel_live_", "ext", 43),
    ("EAAC", "alnum", 100),
    ("EAAM", "alnum", 100),
    ("EAAA", "ext", 22),
    ("hvs.", "ext", 24),
    ("hvb.", "ext", 90),
    ("HRKU-", "ext", 36),
    ("lin_api_", "alnum", 40),
    ("NRAK-", "upper", 27),
    ("NRJS-", "hex", 19),
    ("NRII-", "ext", 32),
    ("ntn_", "alnum", 40),
    ("pscale_tkn_", "ext", 32),
    ("pscale_pw_", "ext", 32),
    ("pscale_oauth_", "ext", 32),
    ("PMAK-", "ext", 59),
    ("pnu_", "alnum", 36),
    ("pul-", "hex", 40),
    ("rdme_", "alnum", 70),
    ("rubygems_", "hex", 48),
    ("tk-us-", "ext", 48),
    ("xkeysib-", "ext", 80),
    ("sm_pat_", "alnum", 16),
    ("sm_aat_", "alnum", 16),
    ("sm_sat_", "alnum", 16),
    ("shippo_live_", "hex", 40),
    ("shippo_test_", "hex", 40),
    ("sha256~", "ext", 43),
    ("pplx-", "alnum", 48),
    ("sq0atp-", "ext", 22),
    ("sq0csp-", "ext", 43),
    ("tfp_", "ext", 44),
    ("ATATT3", "ext", 180),
    ("ATCTT3", "ext", 180),
    ("r8_", "alnum", 37),
    ("gsk_", "alnum", 48),
    ("xai-", "alnum", 60),
    ("nvapi-", "ext", 60),
    ("whsec_", "b64", 24),
    ("glc_", "b64", 32),
    ("glsa_", "alnum", 32),
    ("eyJrIjoi", "b64", 60),
    ("dckr_pat_", "ext", 27),
    ("CFPAT-", "ext", 43),
    ("sl.", "ext", 130),
    ("ya29.", "ext", 30),
    ("1//0", "ext", 40),
    ("ico-", "alnum", 32),
    ("s-s4t2ud-", "hex", 64),
    ("s-s4t2af-", "hex", 64),
    ("sk.eyJ", "ext", 60),
    ("sgp_", "ext", 40),
    ("npm_", "alnum", 36),
    ("sk-ant-", "ext", 32),
    ("AIza", "ext", 35),
    ("mfa.", "ext", 80),
    ("key-", "hex", 32),
    ("pat.", "ext", 60),
    ("sat.", "ext", 60),
    ("AQVN", "ext", 35),
    ("YC", "ext", 38),
    ("t1.", "ext", 90),
    ("beamer_", "ext", 40),
    ("b_", "ext", 44),
    ("sk_prod_", "alnum", 20),
    ("rk_prod_", "alnum", 20),
    ("scauth_", "ext", 40),
    ("authress_", "ext", 40),
    ("pat", "dotted", 78),
    ("API-", "upper", 26),
    ("AccountKey=", "b64", 80),
    ("SharedAccessKey=", "b64", 40),
    ("atlasv1.", "ext", 60),
    ("bedrock-api-key-", "b64", 40),
    ("xoxa-", "ext", 20),
    ("xoxr-", "ext", 20),
    ("xoxo-", "ext", 20),
    ("xoxs-", "ext", 20),
    ("ghp_", "alnum", 30),
    ("github_pat_", "ext", 40),
    ("dnkey-", "ext", 70),
    ("v1.0-", "ext", 150),
    ("sk_live_", "alnum", 10),
    ("sk_test_", "alnum", 10),
    ("rk_live_", "alnum", 10),
    ("rk_test_", "alnum", 10),
    ("hf_", "alnum", 30),
    ("api_org_", "alnum", 30),
)
_BODIES = {
    "hex": "[0-9a-fA-F]",
    "alnum": "[0-9A-Za-z]",
    "upper": "[0-9A-Z]",
    "ext": r"[\w.=~+/-]",
    "b64": "[0-9A-Za-z+/=_-]",
    "dotted": r"[0-9A-Za-z.]",
}


def _prefix_pattern() -> re.Pattern[str]:
    by_body: dict[str, list[str]] = {}
    for prefix, body, shortest in _PREFIXES:
        by_body.setdefault(f"{_BODIES[body]}{{{shortest},}}+", []).append(re.escape(prefix))
    alternatives = "|".join(
        "(?:" + "|".join(sorted(prefixes, key=len, reverse=True)) + ")" + body
        for body, prefixes in by_body.items()
    )
    return re.compile(r"(?<![\w.+/-])(?:" + alternatives + r")(?![\w-])")


_PREFIX = _prefix_pattern()


def looks_random(value: str) -> bool:
    """Whether ``value`` reads as generated: a digit, or mixed case past its first letter, and 8+ long.

    Example:
        >>> looks_random("shpat_3f9a0c"), looks_random("correcthorse"), looks_random("Gen2")
        (True, False, False)
    """
    if len(value) < 8:
        return False
    letters = value[1:]
    return any(c.isdigit() for c in value) or (letters.lower() != letters and letters.upper() != letters)


# A documented sample rather than a secret: a run of one character (``ghp_xxxx…``, ``AKIAXXXX…``,
# ``####``, ``0000…``), the words samples are written with (``PUT_YOUR_TOKEN_HERE``, ``a-fake-key``
# without a digit), or
# no letter or digit at all (``,.:-@*?!``).
_PLACEHOLDER = re.compile(
    r"([xX#*0])\1{5}|(?i:put[_-]your|your[_-](?:api[_-]?)?(?:key|token|secret|password)|[_-]here\b"
    r"|(?:token|string|key|secret)here\b)"
    r"|\A(?=.*(?i:fake))\D*+\Z|\A[^0-9A-Za-z]*+\Z"
)


def placeholder(value: str) -> bool:
    """Whether ``value`` reads as a placeholder or a documented sample, not a generated secret.

    Example:
        >>> placeholder("ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), placeholder("sha256~PUT_YOUR_TOKEN_HERE")
        (True, True)
        >>> placeholder("ghp_3f9A0c8B1d7E2a6F")
        False
    """
    return _PLACEHOLDER.search(value) is not None


# A prefixed token starts a run of these characters (the prefix pattern's look-behind) 12+ long.
_PREFIX_RUN = re.compile(r"(?<![\w.+/-])[\w.+/-]{4}[\w.+/=~-]{8}")


def _scan_prefixes(text: str) -> Iterator[Span]:
    for run in _PREFIX_RUN.finditer(text):  # one cheap pattern first: the alternation is slow
        match = _PREFIX.match(text, run.start())
        if match is None:
            continue
        value = match.group()
        if looks_random(value) and not value.isdigit():
            yield match.span()


# -- keyword assignments ----------------------------------------------------------------------------

# detect-secrets' keyword list (``api[_.-]?key``, ``token``, ``secret``, ``password`` …) plus the
# words gitleaks' rule examples pair with a vendor (``stripeToken``, ``ADOBE_CLIENT_ID``).
_NAME_WORDS = "|".join(
    [k.replace(".*", r"\w{0,20}") for k in _KEYWORDS if "\\b" not in k]
    + [r"_pass", r"pass(?:code|phrase)?", r"credentials?", r"client[_-]?id", r"access[_-]?id", r"key"]
)
# A name is taken whole (possessive, linear) and checked for a keyword afterwards.
_NAME = r"(?<![\w:-])(?:export[ \t]++|set[ \t]++|\$)?([\w.-]{1,80}+)"
_KEYWORD = re.compile("(?i:" + _NAME_WORDS + ")")
_QUOTED = r"""(?:"([^"\r\n]++)"|'([^'\r\n]++)'|`([^`\r\n]++)`)"""
_BARE = r"""([^\s"'`<>(\[{=,;&][^\s"`]*+)"""
_ASSIGNMENT = re.compile(
    _NAME
    + r"""["'\]]?(?:(?:[ \t]*+:[ \t]*+|[ \t]++)(?:string|String|str|bytes|\[\]byte|char[ \t]*+\*)(?!\w))?"""
    + r"""[ \t]*+"""
    + r"""(?::{1,3}=|\?=|=>|\.=|==?|:(?!//)|(?<=["']),(?=[ \t]*+["'`]))[ \t]*+(?:"""
    + _QUOTED
    + "|"
    + _BARE
    + ")"
    + r"|<"
    + _NAME
    + r">[ \t\r\n]*+([^\s<>]++)[ \t\r\n]*+</"
)
# Values that are code or placeholders, not secrets.
_CODE = re.compile(
    r"(?:self|cls|this|os|env|process|config|settings|params|args|request)\.[\w.\[\]'\"()]++"
    r"|[a-z]++(?:_[a-z]++)++|[A-Z]++(?:_[A-Z]++)++|[a-z]++(?:[A-Z][a-z]++)++|\$\{?\w++\}?|\$\{\w++[:?=-].*\}"
    r"|\{\{.*\}\}|<[^>]*+>|\*{3,}+"
    r"|(?i:none|null|nil|true|false|undefined|redacted|required|optional|string|str|bytes|int|bool)"
)
_TRAILING = ".,;:)]}>"
# A call or an index: ``getpass()``, ``os.environ["PW"]`` (not ``Ab(12)cd!9``).
_CALL = re.compile(r"[A-Za-z_]\w*+(?:\.\w++)++\(|[A-Za-z_][\w.]*+\((?:.*\))?\Z|[a-z_][\w.]*+\[")
_ALLOWED_NAMES = tuple(n.lower() for n in _NOT_NAMES)


_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def trim(text: str, start: int, end: int) -> int:
    """The end of an unquoted value without the punctuation after it: ``hunter2.`` / ``(pw=x)``.

    A closing bracket stays when the value opened it (``Ab(12)``, ``M7{a}<b>``).
    """
    while end > start:
        last = text[end - 1]
        closer = last in _CLOSERS and text.count(_CLOSERS[last], start, end) < text.count(last, start, end)
        punctuation = last in ".,;:" or (last in "?!" and end - start > 1 and text[end - 2] in ".,;:?!)]}>")
        if not (closer or punctuation):
            break
        end -= 1
    return end


# Every name above holds one of these (lower-cased): a text without them is not scanned for names.
_NAME_NEEDLES = ("key", "token", "secret", "pass", "pwd", "credential", "client", "access", "contras")


def _assignments(passwords: bool) -> Callable[[str], Iterator[Span]]:
    """Values assigned to a password's name (``passwords``), or to a key's or a token's."""

    def scan(text: str) -> Iterator[Span]:
        for span, password in _scan_assignments(text):
            if password == passwords:
                yield span

    return scan


_LAST: list[tuple[str, tuple[tuple[Span, bool], ...]]] = []  # the last text scanned, for the second rule


def _scan_assignments(text: str) -> tuple[tuple[Span, bool], ...]:
    last = _LAST[-1] if _LAST else None
    if last is not None and last[0] is text:
        return last[1]
    found = tuple(_find_assignments(text))
    _LAST[:] = [(text, found)]
    return found


def _find_assignments(text: str) -> Iterator[tuple[Span, bool]]:
    at = 0
    while (match := _ASSIGNMENT.search(text, at)) is not None:
        name = (match.group(1) or match.group(6)).lower()
        named = match.start(1) if match.group(1) is not None else match.start(6)
        if not _KEYWORD.search(name):
            at = named + len(name)  # not a secret's name: look again after it (``https://…?key=…``)
            continue
        at = match.end()
        group = next(g for g in (2, 3, 4, 5, 7) if match.group(g) is not None)
        start, end = match.span(group)
        if group == 5:  # unquoted: up to the first space; sentence punctuation after it stays
            if named and text[named - 1] in "?&":  # a URL's query: up to the next parameter
                amp = text.find("&", start, end)
                end = end if amp < 0 else amp
            end = trim(text, start, end)
        value = text[start:end]
        if any(allowed in name.replace("-", "").replace("_", "") for allowed in _ALLOWED_NAMES):
            continue  # detect-secrets' names that are no secret: ``secretName``, ``tokenEndpoint``
        if not value or _CODE.fullmatch(value) or _CALL.match(value) or text[end : end + 1] == "(":
            continue
        password = any(w in name for w in ("pass", "pwd", "secret", "contras"))
        if not (looks_random(value) or (password and len(value) >= 4 and not value.isalpha())):
            continue  # a word or a short value: ``token: expired``, ``key = 12``
        if not password and group == 5 and value.isalpha() and value.isupper():
            continue  # a constant's name
        yield (start, end), password


# A secret's name in prose, then (within three short words) a generated value of 16+ characters:
# ``the api key 3f9a… works``, ``heroku key 04dba41e-…``, ``with password Winter2024!``.
_PROSE_NAMED = re.compile(
    r"(?<![\w-])(?i:api[ _-]?key|key|token|secret|password|passphrase|passcode|credentials?)(?![\w-])"
    r"(?:[ \t]++(?![A-Za-z0-9+/=_-]{16})[\w'-]{1,20}+){0,3}?[ \t]++([A-Za-z0-9][\w+/=.~!@#$%^&*-]{7,}+)"
)


def _prose(passwords: bool) -> Callable[[str], Iterator[Span]]:
    """Values named in prose by a password's word (``passwords``), or by a key's or a token's."""

    def scan(text: str) -> Iterator[Span]:
        for match in _PROSE_NAMED.finditer(text):
            if match.group().lower().startswith("pass") == passwords:
                yield from _prose_value(text, match)

    return scan


def _prose_value(text: str, match: re.Match[str]) -> Iterator[Span]:
    start, end = match.span(1)
    end = trim(text, start, end)
    value = text[start:end]
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    long_random = len(value) >= 16 and digits >= 2 and letters >= 2 and looks_random(value)
    password = match.group().lower().startswith("pass") and digits and letters and not value.isalnum()
    if long_random or password:
        yield (start, end)


# -- command lines ----------------------------------------------------------------------------------

_CURL_USER = re.compile(r"""(?<![\w-])(?:-u|--user)(?:=|[ \t]++)["']?([^\s:"'@]{0,64}):([^\s"']++)""")
_MYSQL_PASSWORD = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump|mysqlimport)\b[^\r\n|;&]{0,200}?"
    r"""(?<=[ \t])-p(?:=)?["']?([^\s"']{3,}+)"""
)
# ``Authorization: Basic …`` / ``Token …`` / ``Api-Token …``, or a bare value (that must read as generated).
_BASIC = re.compile(
    r"(?i:\bauthorization\b[\"']?[ \t]*+[:=][ \t]*+[\"']?(?:(basic|token|digest|api-?token|api-?key|sso-key)"
    r"[ \t]++)?)([^\s\"']{8,}+)"
)


# What a command line's documentation writes where the password goes: ``-u user:pass``,
# ``--user "$USER:$PASSWORD"``, ``-u <user:password>``, ``neo4j:[PASSWORD]``, ``xxx:yyy``.
_SAMPLE_PASSWORDS = frozenset(("pass", "password", "passwd", "pwd", "token", "secret", "test", "yyy", "xxx"))


def _scan_commands(text: str) -> Iterator[Span]:
    for pattern in (_CURL_USER, _MYSQL_PASSWORD, _BASIC):
        for match in pattern.finditer(text):
            group = 1 if pattern is _MYSQL_PASSWORD else 2
            start, end = match.span(group)
            end = trim(text, start, end)
            value = text[start:end]
            if value[:1] in "$<[{%" or value.rstrip(">]}").lower() in _SAMPLE_PASSWORDS:
                continue  # a reference or a placeholder, not a password
            if pattern is _BASIC and match.group(1) is None and not looks_random(value):
                continue  # ``Authorization: required``: no scheme, and a word
            if end - start >= 3:
                yield (start, end)


# -- vendor shapes without a prefix of their own -------------------------------------------------------

# Webhook URLs (their path is the secret), Azure AD client secrets (``…8Q~…``), Facebook app tokens
# (``<app id>|<secret>``) and Telegram bot tokens (``<bot id>:AA…``).
_SHAPES = re.compile(
    r"(?:https?://)?(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}+"
    r"|[\w-]++\.webhook\.office\.com/webhookb2/[\w@-]{20,}+/IncomingWebhook/[\w/-]{20,}+)"
    r"|(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}+(?![\w~.-])"
    r"|(?<![\w|])\d{15,16}(?:\||%7[Cc])[\w-]{27}(?![\w-])"
    r"|(?<![\w:])\d{5,16}:A[\w-]{34}(?![\w-])"
)


def _scan_shapes(text: str) -> Iterator[Span]:
    for match in _SHAPES.finditer(text):
        if looks_random(match.group()):
            yield match.span()


# -- high entropy -----------------------------------------------------------------------------------

_B64_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
_RUN = re.compile(r"(?<![\w+/=.@:%-])[A-Za-z0-9+/_-]{24,}+={0,2}(?![\w+/=@-]|\.\w)")


def _scan_entropy(text: str) -> Iterator[Span]:
    for match in _RUN.finditer(text):
        value = match.group()
        if not (any(c.isdigit() for c in value) and value.lower() != value and value.upper() != value):
            continue
        length = min(len(value), 64)
        # Near the most a string of this length can hold: random tokens reach ~90 % of log2(len).
        if calculate_shannon_entropy(value, _B64_CHARSET) >= 0.82 * math.log2(length):
            yield match.span()


DETECTORS: tuple[Detector, ...] = (
    *(
        (f"ds-{plugin.__name__.removesuffix('Detector').lower()}", kind, _plugin_scan(plugin()), needles)
        for plugin, kind, needles in _PLUGINS
    ),
    ("token-prefix", "token", _scan_prefixes, tuple(sorted({p.lower() for p, _, _ in _PREFIXES}))),
    ("keyword-password", "password", _assignments(passwords=True), _NAME_NEEDLES),
    ("keyword-assignment", "api-key", _assignments(passwords=False), _NAME_NEEDLES),
    ("prose-password", "password", _prose(passwords=True), ("pass",)),
    ("prose-named", "api-key", _prose(passwords=False), ("key", "token", "secret", "credential")),
    ("command-credential", "password", _scan_commands, ("-u", "--user", "-p", "authorization")),
    ("vendor-shape", "token", _scan_shapes, ("hooks.slack", "webhook.office", "q~", "|", "%7c", ":a")),
    ("high-entropy", "token", _scan_entropy, tuple("0123456789")),
)
