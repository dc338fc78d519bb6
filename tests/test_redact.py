"""Tests for prima_memory.redact.

Fake credentials are assembled at run time ("sk" + "_live_" ...) so that this
file itself never contains a string that secret scanners would flag.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from prima_memory.redact import redact, redact_enabled, scrub

B62 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz"  # mixed-case + digits filler


def body(n: int) -> str:
    return (B62 * (n // len(B62) + 1))[:n]


AWS_ID = "AK" + "IA" + "IOSFODNN7EXAMPLE"
AWS_STS_ID = "AS" + "IA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GH_CLASSIC = "gh" + "p_" + body(36)
GH_OAUTH = "gh" + "o_" + body(36)
GH_SERVER = "gh" + "s_" + body(36)
GH_USER = "gh" + "u_" + body(36)
GH_REFRESH = "gh" + "r_" + body(36)
GH_FINE = "github" + "_pat_" + "11ABCDEFG0" + body(12) + "_" + body(59)
ANTHROPIC = "sk-" + "ant-api03-" + body(80) + "-" + body(6) + "AA"
OPENAI_LEGACY = "sk-" + body(48)
OPENAI_PROJ = "sk-" + "proj-" + body(40) + "_" + body(30) + "-" + body(20)
SLACK_BOT = "xo" + "xb-" + "123456789012-1234567890123-" + body(24)
SLACK_USER = "xo" + "xp-" + "123456789012-123456789012-123456789012-" + body(32)
GOOGLE = "AI" + "za" + "SyA" + body(32)
STRIPE_LIVE = "sk" + "_live_" + body(24)
STRIPE_RESTRICTED = "rk" + "_live_" + body(24)
STRIPE_TEST = "sk" + "_test_" + body(24)
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
BEARER = "8f3a9c2e71b44d0aa6e5c1f29b7d3e60f1a2"


# --------------------------------------------------------------------------
# Provider token formats
# --------------------------------------------------------------------------

TOKENS = [
    (AWS_ID, "aws-key"),
    (AWS_STS_ID, "aws-key"),
    (GH_CLASSIC, "github-token"),
    (GH_OAUTH, "github-token"),
    (GH_SERVER, "github-token"),
    (GH_USER, "github-token"),
    (GH_REFRESH, "github-token"),
    (GH_FINE, "github-token"),
    (ANTHROPIC, "anthropic-key"),
    (OPENAI_LEGACY, "openai-key"),
    (OPENAI_PROJ, "openai-key"),
    (SLACK_BOT, "slack-token"),
    (SLACK_USER, "slack-token"),
    (GOOGLE, "google-api-key"),
    (STRIPE_LIVE, "stripe-key"),
    (STRIPE_RESTRICTED, "stripe-key"),
    (STRIPE_TEST, "stripe-key"),
    (JWT, "jwt"),
]


@pytest.mark.parametrize("secret,kind", TOKENS, ids=[k + "-" + s[:6] for s, k in TOKENS])
def test_token_redacted_and_context_preserved(secret, kind):
    text = f"Here is the value: {secret} -- keep this tail.\nNext line stays."
    assert redact(text) == f"Here is the value: [REDACTED:{kind}] -- keep this tail.\nNext line stays."


@pytest.mark.parametrize("secret,kind", TOKENS, ids=[k + "-" + s[:6] for s, k in TOKENS])
def test_token_in_quotes_and_at_edges(secret, kind):
    assert redact(secret) == f"[REDACTED:{kind}]"
    assert redact(f'"{secret}"') == f'"[REDACTED:{kind}]"'
    assert redact(f"x=({secret})") == f"x=([REDACTED:{kind}])"


def test_aws_secret_access_key_assignment():
    for text in (
        f"aws_secret_access_key = {AWS_SECRET}",
        f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        f'"SecretAccessKey": "{AWS_SECRET}",',
    ):
        out = redact(text)
        assert AWS_SECRET not in out
        assert "[REDACTED:aws-secret]" in out
        assert out.replace("[REDACTED:aws-secret]", AWS_SECRET) == text


def test_aws_credentials_file():
    text = f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\nregion = eu-west-1\n"
    assert redact(text) == (
        "[default]\naws_access_key_id = [REDACTED:aws-key]\n"
        "aws_secret_access_key = [REDACTED:aws-secret]\nregion = eu-west-1\n"
    )


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com",
            "curl -H 'Authorization: Bearer [REDACTED:bearer-token]' https://api.example.com",
        ),
        (f'{{"Authorization": "Bearer {BEARER}"}}', '{"Authorization": "Bearer [REDACTED:bearer-token]"}'),
        (f"authorization: bearer {BEARER}", "authorization: bearer [REDACTED:bearer-token]"),
        (f"use Bearer {BEARER} for now", "use Bearer [REDACTED:bearer-token] for now"),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "Authorization: Basic [REDACTED:basic-auth]"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
    ],
)
def test_bearer_and_authorization(text, expected):
    assert redact(text) == expected


# --------------------------------------------------------------------------
# PEM private keys
# --------------------------------------------------------------------------

PEM_BODY = "\n".join(body(64) for _ in range(5))


@pytest.mark.parametrize("label", ["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "", "DSA "])
def test_pem_block_fully_removed(label):
    block = f"-----BEGIN {label}PRIVATE KEY-----\n{PEM_BODY}\n-----END {label}PRIVATE KEY-----"
    text = f"Key file contents:\n{block}\nDone."
    out = redact(text)
    assert out == "Key file contents:\n[REDACTED:private-key]\nDone."
    assert "PRIVATE KEY" not in out and body(64) not in out


def test_pem_in_json_with_escaped_newlines():
    block = "-----BEGIN PRIVATE KEY-----\\n" + body(64) + "\\n" + body(40) + "\\n-----END PRIVATE KEY-----\\n"
    text = '{"type": "service_account", "private_key": "' + block + '", "client_email": "x@y.iam"}'
    out = redact(text)
    assert body(40) not in out
    assert out.startswith('{"type": "service_account", "private_key": "[REDACTED:private-key]')
    assert out.endswith('", "client_email": "x@y.iam"}')


def test_pem_truncated_block_still_removed():
    text = "cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + body(70) + "\n" + body(70) + "\n\n(output truncated)"
    out = redact(text)
    assert body(70) not in out
    assert out == "cat id_rsa\n[REDACTED:private-key]\n\n(output truncated)"


def test_public_key_and_certificate_untouched():
    text = "-----BEGIN PUBLIC KEY-----\n" + body(64) + "\n-----END PUBLIC KEY-----\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    assert redact(text) == text


# --------------------------------------------------------------------------
# Passwords in URLs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("postgres://app:s3cr3t-Pa55@db.internal:5432/app", "postgres://app:[REDACTED:password]@db.internal:5432/app"),
        ("DATABASE_URL=mysql+pymysql://root:hunter2@localhost/db", "DATABASE_URL=mysql+pymysql://root:[REDACTED:password]@localhost/db"),
        ("redis://:p%40ss@cache:6379/0", "redis://:[REDACTED:password]@cache:6379/0"),
        ("see https://bob:pa@ss@example.com/x ok", "see https://bob:[REDACTED:password]@example.com/x ok"),
        ("mongodb+srv://admin:Zx9!q@cluster0.abc.mongodb.net/?retryWrites=true", "mongodb+srv://admin:[REDACTED:password]@cluster0.abc.mongodb.net/?retryWrites=true"),
    ],
)
def test_url_password_keeps_user_and_host(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com:8443/path",
        "ssh://git@github.com:22/org/repo.git",
        "https://user@example.com/",
        "mail bob@example.com or see https://example.com",
        'url = f"postgresql://{user}:{password}@{host}/{db}"',
        "postgres://app:${DB_PASSWORD}@db/app",
        "http://[::1]:8080/x@y",
    ],
)
def test_url_without_literal_password_untouched(text):
    assert redact(text) == text


# --------------------------------------------------------------------------
# Assignments: key kept, literal value redacted
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        # env files / shell
        ("DB_PASSWORD=postgres", "DB_PASSWORD=[REDACTED:password]"),
        ("export GITHUB_TOKEN=abc123def456", "export GITHUB_TOKEN=[REDACTED:token]"),
        ("SECRET_KEY='django-insecure-x8'", "SECRET_KEY='[REDACTED:secret]'"),
        ("OPENAI_API_KEY=notreallyakey99", "OPENAI_API_KEY=[REDACTED:api-key]"),
        ("client_secret=Zx9-abc_DEF-123", "client_secret=[REDACTED:secret]"),
        ("PGPASSWORD=hunter22 psql -h db", "PGPASSWORD=[REDACTED:password] psql -h db"),
        # JSON
        ('{"password": "hunter2", "user": "admin"}', '{"password": "[REDACTED:password]", "user": "admin"}'),
        ('{"access_token":"ya29.a0AfH6SMBx","expires_in":3599}', '{"access_token":"[REDACTED:token]","expires_in":3599}'),
        ('{\\"api_key\\": \\"abcd1234efgh\\"}', '{\\"api_key\\": \\"[REDACTED:api-key]\\"}'),
        # YAML
        ("db:\n  user: app\n  password: postgres\n", "db:\n  user: app\n  password: [REDACTED:password]\n"),
        ("  auth_token: 'tok-1234567'", "  auth_token: '[REDACTED:token]'"),
        ("private_key: abcdefgh12345678", "private_key: [REDACTED:private-key]"),
        # code
        ('password = "hunter2"', 'password = "[REDACTED:password]"'),
        ("conn = connect(host='db', passwd='s3cret!x')", "conn = connect(host='db', passwd='[REDACTED:password]')"),
        ('password: str = "changeme99"', 'password: str = "[REDACTED:password]"'),
        ('const apiKey = "k-9f8e7d6c5b";', 'const apiKey = "[REDACTED:api-key]";'),
        ("$password = 'Tr0ub4dor&3';", "$password = '[REDACTED:password]';"),
        ('"client_secret" => "abcd-efgh-1234",', '"client_secret" => "[REDACTED:secret]",'),
        ("token := \"abc123xyz\"", "token := \"[REDACTED:token]\""),
        # CLI flags
        ("mysql --password hunter2 -u root", "mysql --password [REDACTED:password] -u root"),
        ("app --api-key=9f8e7d6c5b4a --verbose", "app --api-key=[REDACTED:api-key] --verbose"),
        ('tool --secret "my secret value" run', 'tool --secret "[REDACTED:secret]" run'),
        # headers, query strings, prose with a credential-looking value
        ("X-Api-Key: 0123456789abcdef", "X-Api-Key: [REDACTED:api-key]"),
        ("GET /login?user=bob&password=abc123xyz&next=/ HTTP/1.1", "GET /login?user=bob&password=[REDACTED:password]&next=/ HTTP/1.1"),
        ("the password is password=hunter22.", "the password is password=[REDACTED:password]."),
        ("passphrase: correct-horse-9", "passphrase: [REDACTED:password]"),
    ],
)
def test_assignment_value_redacted_key_kept(text, expected):
    assert redact(text) == expected


# --------------------------------------------------------------------------
# False positives: must come back unchanged
# --------------------------------------------------------------------------

UNCHANGED = [
    "password = get_password()",
    "password = getpass.getpass('Password: ')",
    "password: str",
    "def login(username: str, password: str) -> bool:",
    "password: Optional[str] = None",
    "password: SecretStr",
    "token = None",
    "token: str | None = None",
    "if password:",
    "if not token: return None",
    "elif password: self.login()",
    "tokenizer = AutoTokenizer.from_pretrained(model_name)",
    "max_tokens = 1024",
    "password_hash = bcrypt.hashpw(password, salt)",
    "password = self.password",
    "password = os.environ['DB_PASSWORD']",
    "token = os.getenv('GITHUB_TOKEN')",
    "secret = secrets.token_hex(32)",
    "token = tokens[i]",
    "password = user_password",
    "api_key = api_key or settings.api_key",
    "token => token.value",
    "apiKey: string;",
    "secret: process.env.SECRET,",
    "password = password.strip()",
    'print("Token: " + tok + " done")',
    'logger.info("password=%s", pw)',
    "export GITHUB_TOKEN=$(gh auth token)",
    "export API_KEY=${API_KEY}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: <your-password>",
    "password = '********'",
    '"password": ""',
    '"password": null, "token": true',
    "password VARCHAR(255) NOT NULL",
    "--password-stdin",
    "the --password option is deprecated",
    "Keep the secret sauce in the ranking function.",
    "The secret: nothing at all.",
    "It's a secret, don't tell.",
    "Password: please enter it twice",
    "Use the Bearer token from the login response.",
    "Authorization header is missing",
    "authorization = request.headers.get('Authorization')",
    "headers = {'Authorization': f'Bearer {token}'}",
    "This is a risk-free refactor of the task-runner and the desk-check tool.",
    "pip install sk-learn-tutorial-for-beginners-2024",
    "ask-me-anything-about-this-project-please",
    "risk_test_helpers_for_everything",
    "the key is AKIA-like but not really",
    "Visit https://docs.python.org/3/library/re.html for details.",
    "git@github.com:org/repo.git",
    "-----BEGIN CERTIFICATE-----",
    "api_key: OpenAI API key used for embeddings.",
    "token_type: bearer",
    "",
    "short",
]


@pytest.mark.parametrize("text", UNCHANGED)
def test_false_positives_unchanged(text):
    assert redact(text) == text


def test_no_trigger_text_returned_as_is():
    text = "Plain prose about pagination and caching.\n" * 50
    assert redact(text) is text


# --------------------------------------------------------------------------
# Idempotence, offsets, mixed documents
# --------------------------------------------------------------------------

MIXED = "\n".join(
    [
        "Setting up the environment:",
        f"export AWS_ACCESS_KEY_ID={AWS_ID}",
        f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        f"GITHUB_TOKEN={GH_CLASSIC}",
        f'client = OpenAI(api_key="{OPENAI_PROJ}")',
        f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com",
        "DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/app",
        '{"password": "hunter2-correct-horse", "user": "admin"}',
        "-----BEGIN RSA PRIVATE KEY-----",
        PEM_BODY,
        "-----END RSA PRIVATE KEY-----",
        f"slack={SLACK_BOT} google={GOOGLE} stripe={STRIPE_LIVE} jwt={JWT}",
        f"ANTHROPIC_API_KEY={ANTHROPIC}",
        "password = get_password()  # unchanged",
        "tokenizer = AutoTokenizer()  # unchanged",
    ]
)

SAMPLES = [s for s, _ in TOKENS] + [MIXED] + [
    "postgres://app:s3cr3t@db/app",
    "DB_PASSWORD=postgres",
    f"Authorization: Bearer {BEARER}",
    "-----BEGIN PRIVATE KEY-----\n" + PEM_BODY + "\n-----END PRIVATE KEY-----",
    f'api_key = "{OPENAI_LEGACY} extra"',
    f"password: {GH_CLASSIC}",
]


@pytest.mark.parametrize("text", SAMPLES, ids=range(len(SAMPLES)))
def test_idempotent(text):
    once = redact(text)
    assert redact(once) == once


def test_mixed_document():
    out = redact(MIXED)
    for secret in (AWS_ID, AWS_SECRET, GH_CLASSIC, OPENAI_PROJ, BEARER, "s3cr3t-Pa55", "hunter2-correct-horse",
                   body(64), SLACK_BOT, GOOGLE, STRIPE_LIVE, JWT, ANTHROPIC):
        assert secret not in out
    assert "password = get_password()  # unchanged" in out
    assert "tokenizer = AutoTokenizer()  # unchanged" in out
    assert "postgres://app:[REDACTED:password]@db.internal:5432/app" in out
    assert out.startswith("Setting up the environment:\nexport AWS_ACCESS_KEY_ID=[REDACTED:aws-key]\n")


def test_only_secret_bytes_change():
    prefix = "Ünïcødé prose — “quotes” and emoji 🎉\n" * 3
    suffix = "\n\tTrailing   whitespace \r\n and more\u00a0text  "
    text = prefix + f"token {GH_CLASSIC}" + suffix
    assert redact(text) == prefix + "token [REDACTED:github-token]" + suffix


def test_offsets_survive_length_changing_lowercase():
    # "İ".lower() is two code points; the lowercased copy must keep offsets.
    text = "İİİ Straße PASSWORD=hunter2x and then İ"
    assert redact(text) == "İİİ Straße PASSWORD=[REDACTED:password] and then İ"


def test_no_quadratic_blowup_on_long_lines():
    line = ('{"token": "x", "password": "' + "a" * 50 + " ") * 2000 + "\n"
    line += "://" * 5000 + "token=" * 5000 + "eyJ" * 5000 + "-----BEGIN PRIVATE KEY-----" * 200
    t0 = time.perf_counter()
    redact(line)
    assert time.perf_counter() - t0 < 5.0


# --------------------------------------------------------------------------
# PRIMA_REDACT / scrub
# --------------------------------------------------------------------------

SECRET_TEXT = f"token {GH_CLASSIC}"


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "no", "No", "off", "OFF", " off "])
def test_scrub_disabled(monkeypatch, value):
    monkeypatch.setenv("PRIMA_REDACT", value)
    assert redact_enabled() is False
    assert scrub(SECRET_TEXT) == SECRET_TEXT


@pytest.mark.parametrize("value", [None, "1", "true", "yes", "on", ""])
def test_scrub_enabled(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("PRIMA_REDACT", raising=False)
    else:
        monkeypatch.setenv("PRIMA_REDACT", value)
    assert redact_enabled() is True
    assert scrub(SECRET_TEXT) == "token [REDACTED:github-token]"


# --------------------------------------------------------------------------
# Regressions found by running over real source trees
# --------------------------------------------------------------------------

REAL_CODE_UNCHANGED = [
    "        password=password,",
    "        sandbox_token=sandbox_token,",
    "    verify_token=metrics_verification_token,",
    'namespace = self.whoami(token=token)["name"]',
    "def __init__(self, password: bytes):",
    "    private_key: PKCS7PrivateKeyTypes,",
    "    private_key: Ed25519PrivateKey | Ed448PrivateKey",
    "    token = Comment",
    '    Token:              "#f8f8f2", # class:  \'\'',
    "    Token:                      FG_DEFAULT,",
    '{"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]"}',
    'HEADER_X_ACCESS_TOKEN = "X-Xet-Access-Token"',
    'EXPIRED_TOKEN = "expired_token"',
    'AttributeOID.CHALLENGE_PASSWORD: "challengePassword",',
    'secret="my-secret",',
    'null_token: str = "__null_token_value__"',
    '"--token": "Use a User Access Token. Prefer setting `HF_TOKEN` env var instead.",',
    'password = ":****"',
    '>>> build_hf_headers(token="hf_***")',
    'api_key="hf_...",  # Pass your HF token',
    "# Cache for the OIDC-exchanged token: re-exchanging on every call would be wasteful,",
    "# cached token: `get_token()` may refresh an OAuth token",
    "fs = filesystem('ftp', host='test.rebex.net', user='demo', password='password')",
    "# gist://username:token@id/file",
    "'http://username:password@host.com:80/path?query#fragment'",
    '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n_SK_END = b"-----END OPENSSH PRIVATE KEY-----"',
    "xoxo-hugs-and-kisses-forever",
    "sk-ant-colony-simulation-project-x",
    "sk-Learn-Tutorial-2024-Edition-x",
    '"AWS::ApiGateway::ApiKey": "48205d4ffd7feba3",',
    "authorization = base64.decodebytes(authorization).decode('ascii')",
    "const token = accessToken;",
    "password=DB_PASSWORD,",
]


@pytest.mark.parametrize("text", REAL_CODE_UNCHANGED)
def test_real_code_unchanged(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "text,expected",
    [
        ("password password=abc123", "password password=[REDACTED:password]"),
        ("don't use password = 'abc123x'", "don't use password = '[REDACTED:password]'"),
        ("it's fine: token = 'abc123xyz'", "it's fine: token = '[REDACTED:token]'"),
        ("password = password123", "password = [REDACTED:password]"),
        ("pw: {'password': 'hunter22'}", "pw: {'password': '[REDACTED:password]'}"),
        ("  - POSTGRES_PASSWORD=postgres", "  - POSTGRES_PASSWORD=[REDACTED:password]"),
        ("DB_PASSWORD=Passw0rd", "DB_PASSWORD=[REDACTED:password]"),
        ("ADMIN_PASSWORD=MyPassword1", "ADMIN_PASSWORD=[REDACTED:password]"),
        ("token=" + "A1b2" * 400 + " tail", "token=[REDACTED:token] tail"),
    ],
)
def test_more_assignments(text, expected):
    assert redact(text) == expected


def test_idempotent_on_random_concatenations():
    # Glued-together secrets, false-positive strings and separators: the
    # second pass must never find anything new.
    import random

    pool = (
        [s for s, _ in TOKENS] + UNCHANGED[:40] + REAL_CODE_UNCHANGED + SAMPLES
        + ["password=", "token: ", "Authorization: Bearer ", "https://u:", "@host", "\n", " ", '"', "'",
           "=", ":", "-----BEGIN RSA PRIVATE KEY-----\n", "-----END RSA PRIVATE KEY-----", "--password ",
           "sk-", "eyJ", ".", "x", "_", "-"]
    )
    rng = random.Random(20240601)
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 8)))
        once = redact(text)
        assert redact(once) == once, text


# --------------------------------------------------------------------------
# Told in prose, webhooks, values on the next line (the hardening issue)
# --------------------------------------------------------------------------

SLACK_HOOK = "https://hooks.slack.com/services/" + "T0" + "1ABCDEF/B0" + "2GHIJKL/" + body(24)
DISCORD_HOOK = "https://discord.com/api/webhooks/" + "123456789012345678/" + body(60)


@pytest.mark.parametrize("text, expected", [
    (f"post alerts to {SLACK_HOOK} please", "post alerts to https://hooks.slack.com/services/"
                                            "[REDACTED:webhook] please"),
    (f"webhook_url = '{DISCORD_HOOK}'", "webhook_url = 'https://discord.com/api/webhooks/"
                                        "[REDACTED:webhook]'"),
    ("my password is hunter2.", "my password is [REDACTED:password]."),
    ("My password is swordfish", "My password is [REDACTED:password]"),
    ("The wifi passphrase was: purple monkey dishwasher.",
     "The wifi passphrase was: [REDACTED:password]."),
    ("passphrase: correct horse battery staple", "passphrase: [REDACTED:password]"),
    ("pw: Tr0ub4dor&3", "pw: [REDACTED:password]"),
    ("Your password is: 'S3cr3t!!'", "Your password is: '[REDACTED:password]'"),
    ("export X_TOKEN=\n" + body(32), "export X_TOKEN=\n[REDACTED:token]"),
    ("export API_KEY=\\\n    " + body(40) + "\nnext", "export API_KEY=\\\n    [REDACTED:api-key]\nnext"),
    # the value on the next line (issue #18: a reply Claude Code split over lines, joined)
    ("The db password is\nhunter2-Secret9 until Friday.",
     "The db password is\n[REDACTED:password] until Friday."),
    ("the passphrase was:\r\n  violet otter lantern", "the passphrase was:\r\n  [REDACTED:password]"),
])
def test_secrets_told_in_prose_webhooks_and_next_line_values(text, expected):
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize("text", [
    "the password is stored in the vault", "the password was wrong, try again",
    "password: please enter it twice", "Then we ran pwd: /work/main and ls",
    "the passphrase is see below", "use the --password flag", "Password reset link sent",
    "pw: short", "export TOKEN_FILE=\n$HOME/.token", "the hooks.slack.com/services page",
    "the password is\nstored in the vault", "The password is\n\n## Next steps",
    "the password is\n- at least 12 characters", "settings:\n  pwd:\n    /srv/app",
])
def test_prose_about_passwords_is_left_alone(text):
    assert redact(text) == text


# --------------------------------------------------------------------------
# A value on the line under its key (issue #36, point 23): redacted as it is
# on the key's own line, and only a line that is one value
# --------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("password:\n  hunter2-Secret9", "password:\n  [REDACTED:password]"),
    ("Password =\n  S3cretValue", "Password =\n  [REDACTED:password]"),
    ('{"password":\n   "hunter2xyz",\n "user": "bob"}',
     '{"password":\n   "[REDACTED:password]",\n "user": "bob"}'),
    ("passwd:\n\n  abc123XYZ\n", "passwd:\n\n  [REDACTED:password]\n"),
    ("secret:\r\n  abc123XYZ", "secret:\r\n  [REDACTED:secret]"),
    ("api_key:\n  abc123XYZdef  # the staging one", "api_key:\n  [REDACTED:api-key]  # the staging one"),
    ("DB_PASSWORD=\nhunter2xyz\nDEBUG=1", "DB_PASSWORD=\n[REDACTED:password]\nDEBUG=1"),
    ("SECRET_KEY =\\\n  'django-insecure-abc123'", "SECRET_KEY =\\\n  '[REDACTED:secret]'"),
    ("my password:\nTr0ub4dor&3", "my password:\n[REDACTED:password]"),
    ("password:\nhunter2xyz.", "password:\n[REDACTED:password]."),
    # a YAML block scalar: its lines, however many, up to the next key
    ("db:\n  password: |\n    S3cretValue\n  user: app", "db:\n  password: |\n    [REDACTED:password]\n  user: app"),
    ("token: >-\n  first part of it\n  and the rest\nnext: 1", "token: >-\n  [REDACTED:token]\nnext: 1"),
])
def test_a_value_on_the_line_under_its_key_is_redacted(text, expected):
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize("text", [
    # the same values judged as on one line: a word in title case reads as a type or prose
    "Password:\nSwordfish", "Password =\n  Swordfish",
    # prose: a label, then a paragraph or a sentence
    "the password field:\n\nThe form has two inputs, one for each.",
    "Here's the secret:\nCaching everything at the edge.", 'The password:\n"Never share it" is our motto.',
    "Enter the password:\nSubmit", "My password:\nhunter2 was leaked, so I changed it",
    # structure: the next key, a nested mapping, a list, code, a reference
    "password:\nusername: admin", "SECRET_KEY=\nDEBUG_MODE=true", "secret:\n  name: my-secret\n  key: pw",
    "token:\n  description: GitHub token\n  required: true", "password:\n  - one\n  - two",
    "password =\n    get_password()", '"api_key":\n        settings.API_KEY,', "  password:\n    str,",
    "password:\n  {{ .Values.db.password }}", "token:\n  ${{ secrets.GH_TOKEN }}",
    "password:\n  $DB_PASSWORD", "password: |\nuser: admin", "password: |\n  {{ .Values.pw }}",
    "| Password: |\n|---|---|", "Args:\n    token:\n        The token to use.",
    # three blank lines: no longer its value
    "password:\n\n\n\nhunter2xyz",
])
def test_what_follows_a_key_on_the_next_line_is_left_alone_when_not_its_value(text):
    assert redact(text) == text
