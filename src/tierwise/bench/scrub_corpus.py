"""A secret and PII test set of our own, modelled on the peers' example corpora (issue 32).

Nothing here is copied from the peers: the *shapes* follow gitleaks' rule examples
(``cmd/generate/config/rules/*.go``: a vendor's name beside a token of its format, written as INI,
YAML, JSON, Go, Python or a shell export), detect-secrets' plugin test payloads (keyword assignments,
``curl -u``, URLs with credentials) and presidio's PII cases (emails, phones, cards, IBANs in
sentences). Every token is generated fresh from its format with a seeded random generator (an
``AKIA`` + 16 characters key, a ``shpat_`` + 32 hex token …), so no real-looking secret is committed
as a literal.

:func:`secret_samples` yields one :class:`Sample` per (rule, written form); :func:`pii_samples` the
PII; :data:`FALSE_POSITIVES` are texts that hold no secret (references, placeholders, hashes, ids).
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["FALSE_POSITIVES", "PASSWORDS", "SECRET_RULES", "Sample", "pii_samples", "secret_samples"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One test sentence: the rule it exercises, its family, the text and the secret inside it."""

    rule: str
    family: str
    text: str
    secret: str


_CHARSETS = {
    "H": "0123456789abcdef",
    "A": string.ascii_letters + string.digits,
    "L": string.ascii_lowercase + string.digits,
    "U": string.ascii_uppercase + string.digits,
    "N": string.digits,
    "E": string.ascii_letters + string.digits + "_-",
    "B": string.ascii_letters + string.digits + "+/",
}
_FIELD = re.compile(r"\{([HALUNEB])(\d+)\}")

# (rule id as gitleaks names it, family, vendor word, format). "unique" rules have a prefix of their
# own; "keyword" rules are a vendor's random string that only its name beside it marks.
# fmt: off
SECRET_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("aws-access-token", "unique", "aws", "AKIA{U16}"),
    ("aws-session-key-id", "unique", "aws", "ASIA{U16}"),
    ("github-pat", "unique", "github", "ghp_{A36}"),
    ("github-oauth", "unique", "github", "gho_{A36}"),
    ("github-app-token", "unique", "github", "ghs_{A36}"),
    ("github-refresh-token", "unique", "github", "ghr_{A36}"),
    ("github-fine-grained-pat", "unique", "github", "github_pat_{A22}_{A59}"),
    ("gitlab-pat", "unique", "gitlab", "glpat-{A20}"),
    ("gitlab-deploy-token", "unique", "gitlab", "gldt-{A20}"),
    ("gitlab-runner-token", "unique", "gitlab", "glrt-{A20}"),
    ("gitlab-feed-token", "unique", "gitlab", "glft-{A20}"),
    ("gitlab-cicd-job-token", "unique", "gitlab", "glcbt-{A5}_{A20}"),
    ("gitlab-feature-flag-token", "unique", "gitlab", "glffct-{A20}"),
    ("gitlab-incoming-mail-token", "unique", "gitlab", "glimt-{A25}"),
    ("gitlab-kubernetes-agent-token", "unique", "gitlab", "glagent-{A50}"),
    ("gitlab-oauth-app-secret", "unique", "gitlab", "gloas-{A64}"),
    ("gitlab-scim-token", "unique", "gitlab", "glsoat-{A20}"),
    ("gitlab-runner-registration", "unique", "gitlab", "GR1348941{A20}"),
    ("openai-api-key", "unique", "openai", "sk-proj-{A40}T3BlbkFJ{A40}"),
    ("anthropic-api-key", "unique", "anthropic", "sk-ant-api03-{E93}AA"),
    ("anthropic-admin-api-key", "unique", "anthropic", "sk-ant-admin01-{E93}AA"),
    ("gcp-api-key", "unique", "gcp", "AIza{E35}"),
    ("stripe-access-token", "unique", "stripe", "sk_live_{A30}"),
    ("stripe-test-token", "unique", "stripe", "sk_test_{A30}"),
    ("stripe-restricted-key", "unique", "stripe", "rk_live_{A30}"),
    ("slack-bot-token", "unique", "slack", "xoxb-{N12}-{N13}-{A24}"),
    ("slack-user-token", "unique", "slack", "xoxp-{N11}-{N11}-{N11}-{H32}"),
    ("slack-app-token", "unique", "slack", "xapp-1-A{U10}-{N13}-{H64}"),
    ("slack-config-access-token", "unique", "slack", "xoxe.xoxp-1-{A164}"),
    ("slack-config-refresh-token", "unique", "slack", "xoxe-1-{A146}"),
    ("slack-legacy-workspace-token", "unique", "slack", "xoxa-2-{N12}-{A18}"),
    ("slack-webhook-url", "unique", "slack", "https://hooks.slack.com/services/T{U8}/B{U10}/{A24}"),
    ("huggingface-access-token", "unique", "huggingface", "hf_{A34}"),
    ("huggingface-org-token", "unique", "huggingface", "api_org_{A34}"),
    ("sendgrid-api-token", "unique", "sendgrid", "SG.{E22}.{E43}"),
    ("shopify-access-token", "unique", "shopify", "shpat_{H32}"),
    ("shopify-shared-secret", "unique", "shopify", "shpss_{H32}"),
    ("shopify-custom-access-token", "unique", "shopify", "shpca_{H32}"),
    ("shopify-private-app-token", "unique", "shopify", "shppa_{H32}"),
    ("npm-access-token", "unique", "npm", "npm_{A36}"),
    ("pypi-upload-token", "unique", "pypi", "pypi-AgEIcHlwaS5vcmc{E70}"),
    ("digitalocean-pat", "unique", "digitalocean", "dop_v1_{H64}"),
    ("digitalocean-access-token", "unique", "digitalocean", "doo_v1_{H64}"),
    ("digitalocean-refresh-token", "unique", "digitalocean", "dor_v1_{H64}"),
    ("sentry-user-token", "unique", "sentry", "sntryu_{H64}"),
    ("databricks-api-token", "unique", "databricks", "dapi{H32}"),
    ("doppler-api-token", "unique", "doppler", "dp.pt.{A43}"),
    ("dynatrace-api-token", "unique", "dynatrace", "dt0c01.{U24}.{A64}"),
    ("easypost-api-token", "unique", "easypost", "EZAK{A54}"),
    ("easypost-test-api-token", "unique", "easypost", "EZTK{A54}"),
    ("flutterwave-secret-key", "unique", "flutterwave", "FLWSECK_TEST-{H32}-X"),
    ("flutterwave-public-key", "unique", "flutterwave", "FLWPUBK_TEST-{H32}-X"),
    ("flyio-access-token", "unique", "fly", "fo1_{E43}"),
    ("frameio-api-token", "unique", "frameio", "fio-u-{E64}"),
    ("alibaba-access-key-id", "unique", "alibaba", "LTAI{A20}"),
    ("adobe-client-secret", "unique", "adobe", "p8e-{A32}"),
    ("artifactory-api-key", "unique", "artifactory", "AKCp{A69}"),
    ("artifactory-reference-token", "unique", "artifactory", "cmVmd{A59}"),
    ("clickhouse-cloud-api-secret-key", "unique", "clickhouse", "4b1d{A38}"),
    ("clojars-api-token", "unique", "clojars", "CLOJARS_{L60}"),
    ("age-secret-key", "unique", "age", "AGE-SECRET-KEY-1{U58}"),
    ("duffel-api-token", "unique", "duffel", "duffel_test_{E43}"),
    ("facebook-page-access-token", "unique", "facebook", "EAAM{A110}"),
    ("vault-service-token", "unique", "vault", "hvs.{E90}"),
    ("heroku-api-key-v2", "unique", "heroku", "HRKU-{E60}"),
    ("linear-api-key", "unique", "linear", "lin_api_{A40}"),
    ("new-relic-user-api-key", "unique", "newrelic", "NRAK-{U27}"),
    ("notion-api-token", "unique", "notion", "ntn_{N11}{A35}"),
    ("planetscale-api-token", "unique", "planetscale", "pscale_tkn_{E43}"),
    ("planetscale-password", "unique", "planetscale", "pscale_pw_{E43}"),
    ("planetscale-oauth-token", "unique", "planetscale", "pscale_oauth_{E43}"),
    ("postman-api-token", "unique", "postman", "PMAK-{H24}-{H34}"),
    ("prefect-api-token", "unique", "prefect", "pnu_{A36}"),
    ("pulumi-api-token", "unique", "pulumi", "pul-{H40}"),
    ("readme-api-token", "unique", "readme", "rdme_{L70}"),
    ("rubygems-api-token", "unique", "rubygems", "rubygems_{H48}"),
    ("scalingo-api-token", "unique", "scalingo", "tk-us-{E48}"),
    ("sendinblue-api-token", "unique", "sendinblue", "xkeysib-{H64}-{A16}"),
    ("settlemint-pat", "unique", "settlemint", "sm_pat_{A16}"),
    ("settlemint-app-token", "unique", "settlemint", "sm_aat_{A16}"),
    ("settlemint-service-token", "unique", "settlemint", "sm_sat_{A16}"),
    ("shippo-api-token", "unique", "shippo", "shippo_live_{H40}"),
    ("openshift-user-token", "unique", "openshift", "sha256~{E43}"),
    ("perplexity-api-key", "unique", "perplexity", "pplx-{A48}"),
    ("square-access-token", "unique", "square", "sq0atp-{E22}"),
    ("square-secret", "unique", "square", "sq0csp-{E43}"),
    ("typeform-api-token", "unique", "typeform", "tfp_{E59}"),
    ("atlassian-api-token", "unique", "atlassian", "ATATT3{E186}"),
    ("twilio-api-key", "unique", "twilio", "SK{H32}"),
    ("mailchimp-api-key", "unique", "mailchimp", "{H32}-us{N2}"),
    ("grafana-cloud-api-token", "unique", "grafana", "glc_{A40}"),
    ("grafana-service-account-token", "unique", "grafana", "glsa_{A32}_{H8}"),
    ("docker-pat", "unique", "docker", "dckr_pat_{E27}"),
    ("contentful-pat", "unique", "contentful", "CFPAT-{E43}"),
    ("infracost-api-token", "unique", "infracost", "ico-{A32}"),
    ("intra42-client-secret", "unique", "intra42", "s-s4t2ud-{H64}"),
    ("mapbox-api-token", "unique", "mapbox", "sk.eyJ{A60}.{A22}"),
    ("sourcegraph-access-token", "unique", "sourcegraph", "sgp_{H16}_{H40}"),
    ("mailgun-private-api-token", "unique", "mailgun", "key-{H32}"),
    ("airtable-pat", "unique", "airtable", "pat{A14}.{H64}"),
    ("octopus-deploy-api-key", "unique", "octopus", "API-{U26}"),
    ("replicate-api-token", "unique", "replicate", "r8_{A37}"),
    ("groq-api-key", "unique", "groq", "gsk_{A52}"),
    ("jwt", "unique", "jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ{E40}.{E43}"),
    ("discord-bot-token", "unique", "discord", "M{E25}.{E6}.{E27}"),
    ("azure-storage-account-key", "unique", "azure", "AccountKey={B86}=="),
    ("adafruit-api-key", "keyword", "adafruit", "{E32}"),
    ("adobe-client-id", "keyword", "adobe", "{H32}"),
    ("airtable-api-key", "keyword", "airtable", "{A17}"),
    ("algolia-api-key", "keyword", "algolia", "{H32}"),
    ("alibaba-secret-key", "keyword", "alibaba", "{A30}"),
    ("asana-client-secret", "keyword", "asana", "{A32}"),
    ("bitbucket-client-secret", "keyword", "bitbucket", "{A64}"),
    ("bittrex-access-key", "keyword", "bittrex", "{A32}"),
    ("cloudflare-api-key", "keyword", "cloudflare", "{E40}"),
    ("cloudflare-global-api-key", "keyword", "cloudflare", "{H37}"),
    ("codecov-access-token", "keyword", "codecov", "{A32}"),
    ("cohere-api-token", "keyword", "cohere", "{A40}"),
    ("coinbase-access-token", "keyword", "coinbase", "{E64}"),
    ("confluent-secret-key", "keyword", "confluent", "{A64}"),
    ("contentful-delivery-api-token", "keyword", "contentful", "{A43}"),
    ("datadog-access-token", "keyword", "datadog", "{A40}"),
    ("discord-api-token", "keyword", "discord", "{H64}"),
    ("droneci-access-token", "keyword", "droneci", "{A32}"),
    ("dropbox-api-token", "keyword", "dropbox", "{A15}"),
    ("etsy-access-token", "keyword", "etsy", "{A24}"),
    ("facebook-secret", "keyword", "facebook", "{H32}"),
    ("fastly-api-token", "keyword", "fastly", "{E32}"),
    ("finicity-api-token", "keyword", "finicity", "{H32}"),
    ("finnhub-access-token", "keyword", "finnhub", "{A20}"),
    ("flickr-access-token", "keyword", "flickr", "{A32}"),
    ("freshbooks-access-token", "keyword", "freshbooks", "{A64}"),
    ("gitter-access-token", "keyword", "gitter", "{E40}"),
    ("hubspot-api-key", "keyword", "hubspot", "{H8}-{H4}-{H4}-{H4}-{H12}"),
    ("intercom-api-key", "keyword", "intercom", "{E60}"),
    ("jfrog-api-key", "keyword", "jfrog", "{A73}"),
    ("kraken-access-token", "keyword", "kraken", "{E80}"),
    ("kucoin-secret-key", "keyword", "kucoin", "{H8}-{H4}-{H4}-{H4}-{H12}"),
    ("launchdarkly-access-token", "keyword", "launchdarkly", "{E40}"),
    ("lob-api-key", "keyword", "lob", "live_{H35}"),
    ("looker-client-secret", "keyword", "looker", "{A24}"),
    ("mattermost-access-token", "keyword", "mattermost", "{A26}"),
    ("messagebird-api-token", "keyword", "messagebird", "{A25}"),
    ("netlify-access-token", "keyword", "netlify", "{E43}"),
    ("nytimes-access-token", "keyword", "nytimes", "{E32}"),
    ("okta-access-token", "keyword", "okta", "00{E40}"),
    ("plaid-secret-key", "keyword", "plaid", "{A30}"),
    ("rapidapi-access-token", "keyword", "rapidapi", "{E50}"),
    ("sendbird-access-token", "keyword", "sendbird", "{H40}"),
    ("sentry-access-token", "keyword", "sentry", "{H64}"),
    ("snyk-api-token", "keyword", "snyk", "{H8}-{H4}-{H4}-{H4}-{H12}"),
    ("sumologic-access-token", "keyword", "sumo", "{A64}"),
    ("telegram-bot-api-token", "keyword", "telegram", "{N10}:A{E34}"),
    ("travisci-access-token", "keyword", "travis", "{A22}"),
    ("trello-access-token", "keyword", "trello", "{A32}"),
    ("twitch-api-token", "keyword", "twitch", "{A30}"),
    ("twitter-api-secret", "keyword", "twitter", "{A50}"),
    ("twitter-access-token", "keyword", "twitter", "{N19}-{A40}"),
    ("yandex-api-key", "keyword", "yandex", "AQVN{E38}"),
    ("zendesk-secret-key", "keyword", "zendesk", "{A40}"),
    ("generic-api-key", "keyword", "service", "{E32}"),
    # Shapes found measuring gitleaks' own examples from outside (issue 32): no prefix of their own.
    ("azure-ad-client-secret", "unique", "azure", "{A3}{N1}Q~{E34}"),
    ("facebook-access-token", "unique", "facebook", "{N15}|{E27}"),
    ("telegram-bot-token", "unique", "telegram", "{N10}:AA{E33}"),
    ("microsoft-teams-webhook", "unique", "teams",
     "https://acme.webhook.office.com/webhookb2/{H8}-{H4}-{H4}-{H4}-{H12}@{H8}-{H4}-{H4}-{H4}-{H12}"
     "/IncomingWebhook/{H32}/{H8}-{H4}-{H4}-{H4}-{H12}"),
    ("slack-webhook-url-v2", "unique", "slack", "https://hooks.slack.com/workflows/{A44}"),
)
# fmt: on

#: Passwords with the symbols people type (detect-secrets' keyword payloads, the issue's examples).
PASSWORDS = (
    "Tr0ub4dor&3xQ", "Ab(12)cd!9", "S3cr3tPassw0rd", "p@ss;word,with=odd'chars", "C0rrect-H0rse_B@ttery",
    "x9$kL!q2#Zr%", "hunter2!", "M7{curly}[sq]<ang>", "correct horse 42!", "Zq8*" + "A1b2" * 64,
)  # fmt: skip


def _fill(template: str, rng: random.Random) -> str:
    return _FIELD.sub(
        lambda m: "".join(rng.choice(_CHARSETS[m.group(1)]) for _ in range(int(m.group(2)))), template
    )


def _forms(vendor: str, unique: bool) -> tuple[str, ...]:
    upper, camel = vendor.upper(), vendor.lower()
    forms: tuple[str, ...] = (
        f'{camel}Token = "{{s}}"',  # Python, Go, Kotlin
        f"{upper}_TOKEN={{s}}",  # INI, .env
        f"{camel}_token: {{s}}",  # YAML
        f'{{{{"{camel}_api_key": "{{s}}"}}}}',  # JSON
        f"export {upper}_API_KEY={{s}}",  # shell
        f"{camel}Secret := `{{s}}`",  # Go backticks
        f"<{camel}Token>{{s}}</{camel}Token>",  # XML
        f'var {camel}Token string = "{{s}}"',  # Go, typed
        f'{upper}_TOKEN ?= "{{s}}"',  # Makefile, conditional (also ::=, :::=)
        f'System.setProperty("{upper}_TOKEN", "{{s}}")',  # a call: name, value
    )
    if unique:  # a vendor prefix is enough on its own: said in prose, without any name
        forms += ("here is what the dashboard gave me: {s} - can you check why it fails?",)
    return forms


def secret_samples(seed: int = 32) -> Iterator[Sample]:
    """Every secret rule in each of its written forms, plus the password forms, with fresh tokens."""
    rng = random.Random(seed)
    for rule, family, vendor, template in SECRET_RULES:
        for form in _forms(vendor, family == "unique"):
            secret = _fill(template, rng)
            yield Sample(rule, family, form.format(s=secret), secret)
    for password in PASSWORDS:
        for rule, form in (
            ("password-yaml", "password: {s}"),
            ("password-env", "DB_PASSWORD={s}"),
            ("password-quoted", 'password = "{s}"'),
            ("password-prose", "my password is '{s}' for the staging box"),
            ("password-url", "postgres://admin:{s}@db.internal:5432/app"),
            ("password-curl", "curl -u admin:{s} https://api.internal/v1/items"),
            ("password-curl-header", "curl -H 'Authorization: Api-Token {s}' https://api.internal/v1"),
            ("password-mysql", "mysql -u root -p{s} orders"),
            ("password-flag", "run it with --db-password '{s}' please"),
            ("password-export", "export TOKEN='{s}'"),
        ):
            if " " in password and rule in (
                "password-yaml",
                "password-env",
                "password-url",
                "password-curl",
                "password-curl-header",
                "password-mysql",
            ):
                continue  # unquoted, a space ends any value
            web = rule in ("password-url", "password-curl", "password-curl-header")
            if web and any(c in password for c in "@/:'"):
                continue  # such a password is percent-encoded in a URL
            if rule == "password-mysql" and "'" in password:
                continue
            quoted = rule in ("password-quoted", "password-prose", "password-flag", "password-export")
            if quoted and "'" in password:
                continue
            yield Sample(rule, "password", form.format(s=password), password)


def _luhn(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return body + str((10 - total % 10) % 10)


def _iban(country: str, length: int, rng: random.Random) -> str:
    bban = "".join(rng.choice(string.digits) for _ in range(length - 4))
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


def pii_samples(seed: int = 32) -> Iterator[Sample]:
    """Emails, phones, cards and IBANs in sentences, in the formats presidio's cases use."""
    rng = random.Random(seed)
    names = ("jane.doe", "m.rossi", "li_wei+news", "o.connor", "ahmed99")
    domains = ("acme.io", "mail.example.org", "uni-bonn.de", "corp.co.uk", "gmail.com")
    for i in range(10):
        email = f"{names[i % 5]}@{domains[(i * 3) % 5]}"
        yield Sample("email", "pii", f"Please write to {email} before Friday.", email)
    yield Sample("email", "pii", "or olga@xn--e1afmkfd.xn--p1ai (punycode)", "olga@xn--e1afmkfd.xn--p1ai")
    phones = ("+44 20 7946 0{n3}", "+1 (555) 2{n2}-4{n3}", "(212) 555-0{n3}", "555-2{n2}-7{n3}",
              "+49 30 1234{n3}", "020 7946 0{n3}", "01 23 45 6{n1} 89", "+33 6 12 34 5{n1} 78",
              "1-800-555-0{n3}", "+91 98765 4{n2}10", "+30 21 0 12{n2}567")  # fmt: skip
    for template in phones:
        phone = template.format(
            n1=rng.randint(0, 9), n2=f"{rng.randint(0, 99):02d}", n3=f"{rng.randint(0, 999):03d}"
        )
        yield Sample("phone", "pii", f"You can reach me on {phone} after six.", phone)
    mobile = f"139{rng.randint(0, 99_999_999):08d}"
    yield Sample("phone", "pii", f"My CN number is {mobile}", mobile)
    for prefix, length in (("4", 16), ("51", 16), ("37", 15), ("6011", 16), ("35", 16)) * 2:
        card = _luhn(prefix, length, rng)
        spaced = " ".join(card[i : i + 4] for i in range(0, len(card), 4)) if rng.random() < 0.5 else card
        yield Sample("card", "pii", f"Charge it to my card {spaced}, expiry 09/29.", spaced)
    # Forms presidio's cases hold: a card written twice, plain then dashed; Diners' 14 digits; UATP.
    plain, dashed = _luhn("4", 16, rng), _luhn("52", 16, rng)
    dashed = "-".join(dashed[i : i + 4] for i in range(0, 16, 4))
    yield Sample("card", "pii", f"old {plain} {dashed} new", plain)
    yield Sample("card", "pii", f"old {plain} {dashed} new", dashed)
    diners = _luhn("305", 14, rng)
    yield Sample("card", "pii", f"The Diners card {diners} is the company's.", diners)
    uatp = _luhn("1", 15, rng)
    yield Sample("card", "pii", f"my credit card: {uatp}", uatp)
    for country, length in (("DE", 22), ("GB", 22), ("FR", 27), ("NL", 18), ("ES", 24)) * 2:
        iban = _iban(country, length, rng) if country != "GB" else _gb_iban(rng)
        yield Sample("iban", "pii", f"Wire the deposit to IBAN {iban} please.", iban)


def _gb_iban(rng: random.Random) -> str:
    bban = "WEST" + "".join(rng.choice(string.digits) for _ in range(14))
    numeric = "".join(str(int(c, 36)) for c in bban + "GB00")
    return f"GB{98 - int(numeric) % 97:02d}{bban}"


#: Texts that hold no secret, modelled on the peers' allow-lists and false-positive examples.
FALSE_POSITIVES = (
    'api_key = os.environ["OPENAI_API_KEY"]',
    "password = getpass.getpass()",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "DB_PASSWORD=${DB_PASSWORD}",
    "secret_key = settings.SECRET_KEY",
    "export API_KEY=$API_KEY",
    "password: <your-password-here>",
    'token = "********"',
    "auth_token: null",
    "api_key: str = Field(...)",
    "def login(username, password):",
    "if password == confirm_password:",
    "the commit is 3f2c1e9a7b8d4c6e0f1a2b3c4d5e6f7a8b9c0d1e on main",
    "request id 550e8400-e29b-41d4-a716-446655440000 failed",
    "see https://github.com/gitleaks/gitleaks/blob/master/README.md",
    "pip install scikit-learn==1.5.2 and sk-learn-style names",
    "the build took 2026-10-13T10:30:00Z to 2026-10-13T10:42:11Z",
    "version v1.2.3-rc.4+build.567 is out",
    "token expired, please log in again",
    "the secret: consistency beats intensity",
    "Pick a strong password with symbols and digits.",
    "Reset your password at https://accounts.example.com/reset",
    "The key to success is patience.",
    "client_id: my_client_id",
    "passwordless login via magic link",
    "AWS region us-east-1, bucket my-app-assets",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "max_tokens=1024, temperature=0.2",
    "keyboard shortcut: Ctrl+Shift+P",
    "SECRET_NAME=prod/db/credentials",
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod-db",
    "the file is at /usr/local/lib/python3.11/site-packages/requests/__init__.py",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "api-key header missing in the request",
    "I forgot my password again, ugh",
    "her access: granted until Monday",
    "key: value pairs are separated by commas",
    "passphrase prompts appear on first use",
    "token_count = count_tokens(text)",
    "password_hash = bcrypt.hashpw(pw, salt)",
    # Placeholders and references, as the peers' documentation writes them (issue 32).
    "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "set OPENSHIFT_TOKEN=sha256~PUT_YOUR_TOKEN_HERE first",
    "curl -u user:pass https://example.com/api",
    'curl --user "$USERNAME:$PASSWORD" $API_URL',
    "curl -u <user:password> https://example.com",
    "SUMO_ACCESS_KEY=${SUMO_ACCESS_KEY:=$2}",
    "GET /create?access_token=ACCESS_TOKEN",
    'cloudant_password = "a-fake-password"',
    'password = ",.:-@*?!"',
    '"https://host:8000";@else',
)
