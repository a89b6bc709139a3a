"""Documented samples and non-secrets the scrubber kept masking (issue 32, ``memory/scrub_samples.py``).

Each class here was flagged before: measured from outside the repo on gitleaks' ``fps`` and
detect-secrets' negative payloads. Every text is our own; the random bodies are written for this
test. Beside each class, a real-shaped secret of the same form stays masked.
"""

from __future__ import annotations

import base64
import json

import pytest

from tierwise.memory.scrub import Scrubber
from tierwise.memory.scrub_samples import wordy

SCRUB = Scrubber()
RANDOM = "q7Rk2vX9mB4nT8wL3pZ6cY1hF5dJ0sGa8eU4"  # 36 random characters


def _b64(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "text",
    [
        "the struct field is hf_sessionRecordingPreferencesForAccountSettings;",  # an identifier
        "slack says xoxb-our-release-notifier-robot is the bot's handle",
        "gitlab wants glpat-PleaseChange_thisBefore-Deploying2 here",
        "set api_key: 'paste the value from your dashboard'",  # words, not a key
    ],
)
def test_a_token_written_in_words_is_kept(text: str) -> None:
    assert SCRUB.scrub(text).findings == ()


@pytest.mark.parametrize(
    "text",
    [
        f"hf_{RANDOM[:34]}",
        f"xoxb-{RANDOM[:12]}-{RANDOM[12:36]}",
        "export TOKEN='correct horse 42!'",  # a passphrase: symbols, not only words
    ],
)
def test_a_random_token_of_the_same_form_is_masked(text: str) -> None:
    assert SCRUB.scrub(text).findings


def test_wordy_tells_words_from_random_bodies() -> None:
    assert wordy("meetingRoomBookingCalendar")
    assert not wordy(RANDOM)
    assert not wordy("abcd1234abcd1234ABCD1234")  # counting is no word: a sample the peers count
    assert not wordy("1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ")


def test_aws_documented_example_keys_are_kept() -> None:
    assert SCRUB.scrub("aws_access_key_id = AKIAJ3MPLEDOCS7EXAMPLE").findings == ()
    assert SCRUB.scrub('secret = "bN7pQ2/xYz9AbCdEfGhIjKlMnOpQrEXAMPLEKEY"').findings == ()
    assert SCRUB.scrub("aws_access_key_id = AKIAJ3MPLEDOCS7QW4RT").findings


def test_a_public_stripe_key_is_kept_a_secret_one_masked() -> None:
    assert SCRUB.scrub(f"pk_live_{RANDOM[:24]}").findings == ()
    assert SCRUB.scrub(f"sk_live_{RANDOM[:24]}").findings


def test_a_value_cut_short_with_an_ellipsis_is_kept() -> None:
    assert SCRUB.scrub(f"run: export SERVICE_TOKEN={RANDOM[:20]}...").findings == ()
    assert SCRUB.scrub(f"run: export SERVICE_TOKEN={RANDOM[:20]}").findings


def test_a_jwt_whose_header_is_not_json_is_kept() -> None:
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}))
    payload = _b64(json.dumps({"sub": "4711", "name": "Ana"}))
    assert SCRUB.scrub(f"eyJzzzzzz.eyJyyyyyy.{RANDOM[:20]}").findings == ()
    assert SCRUB.scrub(f"eyJqwerty{header[3:]}.{payload}.{RANDOM[:22]}").findings == ()
    assert SCRUB.scrub(f"{header}.{payload}.{RANDOM[:22]}").findings


def test_a_pem_block_without_key_material_is_kept() -> None:
    assert SCRUB.scrub("-----BEGIN PRIVATE KEY-----\nyour key here\n-----END PRIVATE KEY-----").findings == ()
    body = "\n".join([RANDOM * 2] * 3)
    assert SCRUB.scrub(f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----").findings


def test_base64_of_a_sentence_or_of_json_is_kept() -> None:
    sentence = base64.b64encode(b"the meeting moved to thursday at noon").decode()
    header = base64.b64encode(b'{"alg":"RS256","kid":"k1"}').decode().rstrip("=")
    assert SCRUB.scrub(f"the blob was {sentence} in the log").findings == ()
    assert SCRUB.scrub(f"header {header} only").findings == ()
    assert SCRUB.scrub(f"the blob was {RANDOM} in the log").findings
