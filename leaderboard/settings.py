"""Settings for Specboard, read from the environment; `.env.example` lists every variable."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import socket
import sys
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from leaderboard.accounts.providers import social_providers
from runner.engines.build import DEFAULT_RELEASE

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {value!r}")


def _env_number[N: (int, float)](name: str, default: N, kind: type[N], what: str) -> N:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}, not {value!r}") from None


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_networks(name: str) -> tuple[str, ...]:
    """Comma-separated networks (10.0.0.0/8, 127.0.0.1/32, fd00::/8; a bare address is its own
    network), each checked: an empty entry, a network with host bits set (10.0.0.1/8, which
    means either 10.0.0.1/32 or 10.0.0.0/8) or no network at all stops the site."""
    value = os.environ.get(name, "").strip()
    if not value:
        return ()
    networks = []
    for entry in value.split(","):
        try:
            networks.append(str(ipaddress.ip_network(entry.strip(), strict=True)))
        except ValueError as error:
            raise ImproperlyConfigured(
                f"{name} must be comma-separated networks like 10.0.0.0/8,127.0.0.1/32; "
                f"{entry.strip()!r} is not one ({error})"
            ) from None
    return tuple(networks)


def database_from_url(url: str) -> dict:
    """A DATABASES entry from postgres://user:password@host:port/name?option=value or
    sqlite:///path."""
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL names no database")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE", 60),
            "CONN_HEALTH_CHECKS": True,
        }
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if path.startswith("//"):
            path = path[1:]
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path or ":memory:"}
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parts.scheme!r} is not postgres or sqlite")


def redis_answers(url: str, timeout: float = 0.3) -> bool:
    """Whether a Redis server answers PING at the URL's host and port."""
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or 6379), timeout
        ) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


DEBUG = env_bool("DEBUG")
# A GPU worker runs benchmarks only: it gets the broker URL, never database credentials.
ROLE = env_str("SPECBOARD_ROLE", "web")
if ROLE not in ("web", "gpu-worker"):
    raise ImproperlyConfigured(f"SPECBOARD_ROLE must be 'web' or 'gpu-worker', not {ROLE!r}")

# A test run (pytest or `manage.py test`) signs only throwaway data, like DEBUG; mypy's Django
# plugin loads these settings to type-check and signs nothing.
TESTING = "pytest" in sys.modules or sys.argv[1:2] == ["test"]
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if DEBUG or TESTING or ROLE == "gpu-worker" or "mypy" in sys.modules:
        # Nothing lasting is signed with it: DEBUG and test sessions are throwaway, a GPU worker
        # has none.
        SECRET_KEY = "insecure-" + secrets.token_hex(24)
    else:
        raise ImproperlyConfigured("SECRET_KEY must be set unless DEBUG=1")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" + (",*" if DEBUG else ""))
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    # Accounts people make themselves (allauth), and sign-in through GitHub or Hugging Face
    # where a deployment configures them (SOCIALACCOUNT_PROVIDERS below; none by default).
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.github",
    "allauth.socialaccount.providers.openid_connect",
    "leaderboard",
    # Hashed API tokens (they replaced rest_framework.authtoken's plain keys) and /account/.
    "leaderboard.accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]
# Every per-address limit (sign-in lockouts, sign-up and reset limits, API throttles) counts a
# request under leaderboard.web.client_address: the connection's peer, or behind this many reverse
# proxies that append to X-Forwarded-For, that header's entry this far from the right.
# The header is read only from a peer in SPECBOARD_TRUSTED_PROXY_NETWORKS, the networks the
# operator lists (none by default: loopback and the private ranges are where containers, a
# docker port mapping or a neighbour on the LAN connect from, not only the proxy), or from a
# Unix socket.
SPECBOARD_TRUSTED_PROXIES = env_int("SPECBOARD_TRUSTED_PROXIES", 0)
if SPECBOARD_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured("SPECBOARD_TRUSTED_PROXIES must be 0 or more")
SPECBOARD_TRUSTED_PROXY_NETWORKS = env_networks("SPECBOARD_TRUSTED_PROXY_NETWORKS")

# Failed sign-ins are counted in the database (so every web process sees them) per account,
# from whatever addresses they came: after SPECBOARD_SIGNIN_FAILURES failures that account is
# locked out for SPECBOARD_SIGNIN_COOLOFF_MINUTES, and the sign-in page says so (a count per
# account and address let a guesser with many addresses go on, and locked out the owner's
# neighbours behind one address instead). Its owner clears the lockout from any new session by
# finishing a password reset from the mailed link (accounts.forms.PasswordResetForm). The address
# itself is throttled after SPECBOARD_SIGNIN_ADDRESS_FAILURES failures in that time, whichever
# accounts it tried (ACCOUNT_RATE_LIMITS' login_failed below, in the shared cache).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # By user name or email address, with one password hash per attempt whether or not an
    # account answers (allauth passes the request along, which the axes backend needs).
    "leaderboard.accounts.backends.SignInBackend",
]
AXES_FAILURE_LIMIT = env_int("SPECBOARD_SIGNIN_FAILURES", 5)
SIGNIN_COOLOFF_MINUTES = env_int("SPECBOARD_SIGNIN_COOLOFF_MINUTES", 15)
AXES_COOLOFF_TIME = timedelta(minutes=SIGNIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = ["username"]
SIGNIN_ADDRESS_FAILURES = env_int("SPECBOARD_SIGNIN_ADDRESS_FAILURES", 20)
if min(AXES_FAILURE_LIMIT, SIGNIN_COOLOFF_MINUTES, SIGNIN_ADDRESS_FAILURES) < 1:
    raise ImproperlyConfigured(
        "SPECBOARD_SIGNIN_FAILURES, SPECBOARD_SIGNIN_COOLOFF_MINUTES and "
        "SPECBOARD_SIGNIN_ADDRESS_FAILURES must be 1 or more"
    )
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
AXES_CLIENT_IP_CALLABLE = "leaderboard.web.client_address.client_address"
# Failures count against the account, however its name or address is typed.
AXES_USERNAME_CALLABLE = "leaderboard.accounts.selectors.sign_in_name"


def env_rates(name: str, default: str) -> str:
    """allauth's rate syntax: comma-separated `amount/period[/ip|key|user]`, periods like 1h,
    30m."""
    value = os.environ.get(name) or default
    rate = re.compile(r"\d+/(\d+(\.\d+)?)?[smhd](/(ip|key|user))?")
    if not all(rate.fullmatch(part.strip()) for part in value.split(",")):
        raise ImproperlyConfigured(
            f"{name} must be rates like '10/h' or '10/h/ip,3/h/key', not {value!r}"
        )
    return value


# Sign-up needs an email address, confirmed through a link sent to it before the account can sign
# in; sign-in takes the user name or the address. The forms' POSTs that send mail or make
# accounts are limited per address in Django's cache: the shared Redis (CACHE_URL) wherever
# several web processes serve, which leaderboard/web/gunicorn_conf.py insists on. Failed sign-ins
# lock an account through django-axes (above, in the database, cleared by a finished reset);
# allauth's login_failed limit is only the per-address throttle (one lockout per account, not
# two that a reset would have to clear).
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[Specboard] "
ACCOUNT_FORMS = {
    # A taken user name gets the page a new account gets; only the address given learns it.
    "signup": "leaderboard.accounts.forms.SignUpForm",
    "login": "leaderboard.accounts.forms.SignInForm",
    # Both offer to revoke the account's API tokens; a reset does unless the owner keeps them.
    "change_password": "leaderboard.accounts.forms.PasswordChangeForm",
    "reset_password_from_key": "leaderboard.accounts.forms.PasswordResetForm",
}
ACCOUNT_ADAPTER = "leaderboard.accounts.adapter.AccountAdapter"
ACCOUNT_RATE_LIMITS = {
    "signup": env_rates("SPECBOARD_SIGNUP_RATE", "10/h/ip"),
    "reset_password": env_rates("SPECBOARD_PASSWORD_RESET_RATE", "10/h/ip,3/h/key"),
    "login": None,
    "login_failed": f"{SIGNIN_ADDRESS_FAILURES}/{SIGNIN_COOLOFF_MINUTES}m/ip",
}
# A reset link's token, made and checked without writing to the account (allauth's own copies
# the account's `email` into an unconfirmed address record, which then blocked its sign-in).
ACCOUNT_PASSWORD_RESET_TOKEN_GENERATOR = "leaderboard.accounts.password_reset.ResetTokenGenerator"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_LOGIN_ON_GET = False


SOCIALACCOUNT_PROVIDERS = social_providers()  # leaderboard/accounts/providers.py

MAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
}


def mailer_from_environment() -> dict:
    """Django's default mailer: the console unless EMAIL_BACKEND says smtp (EMAIL_HOST, EMAIL_PORT,
    EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS or EMAIL_USE_SSL, EMAIL_TIMEOUT) or file
    (EMAIL_FILE_PATH)."""
    kind = env_str("EMAIL_BACKEND", "console")
    if kind not in MAIL_BACKENDS:
        raise ImproperlyConfigured(
            f"EMAIL_BACKEND must be one of {', '.join(MAIL_BACKENDS)}, not {kind!r}"
        )
    options: dict = {}
    if kind == "smtp":
        options = {
            "host": env_str("EMAIL_HOST", "localhost"),
            "port": env_int("EMAIL_PORT", 587),
            "username": env_str("EMAIL_HOST_USER"),
            "password": env_str("EMAIL_HOST_PASSWORD"),
            "use_tls": env_bool("EMAIL_USE_TLS", True),
            "use_ssl": env_bool("EMAIL_USE_SSL", False),
            "timeout": env_int("EMAIL_TIMEOUT", 20),
        }
        if options["use_tls"] and options["use_ssl"]:
            raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on")
    elif kind == "file":
        if not env_str("EMAIL_FILE_PATH"):
            raise ImproperlyConfigured("EMAIL_BACKEND=file needs EMAIL_FILE_PATH (a folder)")
        options = {"file_path": env_str("EMAIL_FILE_PATH")}
    return {"default": {"BACKEND": MAIL_BACKENDS[kind], "OPTIONS": options}}


# Django 6.1's mailers (the EMAIL_* settings are deprecated; the variables keep their names).
MAILERS = mailer_from_environment()
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Specboard <specboard@localhost>")

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
if ROLE == "gpu-worker":
    # The dummy backend raises on any query, which proves the GPU side never touches the database.
    DATABASES: dict = {"default": {"ENGINE": "django.db.backends.dummy"}}
elif DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    VAR_DIR.mkdir(exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "specboard.sqlite3",
            "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;", "timeout": 20},
            # A file, not memory, so that worker processes in end-to-end tests share it.
            "TEST": {"NAME": str(VAR_DIR / "test-specboard.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHE_URL = env_str("CACHE_URL")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL
    # One process's own cache, not Django's default of 300 entries.
    else {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 5000},
    },
    # The pages kept for visitors not signed in (leaderboard.web.page_cache), in each web process's
    # memory: a kept page is checked against its rankings' versions in the database (read at
    # most once per SPECBOARD_BOARD_VERSION_SECONDS), and a hit costs no round trip to Redis for
    # its hundreds of KB. At most this many pages a process (the largest, the front page at 1M
    # runs, is 440 KB).
    "pages": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pages",
        "OPTIONS": {"MAX_ENTRIES": env_int("SPECBOARD_PAGES_KEPT", 128)},
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "leaderboard"
LOGOUT_REDIRECT_URL = "leaderboard"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG or not env_bool("STATIC_MANIFEST", True)
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Security headers. Scripts and styles come from our own static files only: no inline code.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", not DEBUG)
# Behind a TLS proxy the site is HTTPS-only by default: redirect plain HTTP, and tell browsers
# (HSTS, a year) to come back over HTTPS only; either can still be set explicitly.
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", BEHIND_TLS_PROXY)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if BEHIND_TLS_PROXY else 0)
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # One line per benchmark request is noise in a worker's log.
    # huggingface_hub's client (httpx2) logs every Hub request too.
    "loggers": {"httpx": {"level": "WARNING"}, "httpx2": {"level": "WARNING"}},
}

# Specboard.
SPECBOARD_MODELS_DIR = Path(env_str("SPECBOARD_MODELS_DIR", str(VAR_DIR / "models"))).resolve()
# Models registered by Hugging Face reference: the Hub (or a mirror) they come from, passed to
# huggingface_hub explicitly (it reads HF_ENDPOINT only once, at import), and a token for gated
# or private repositories. GPU hosts fetch them on first use into the model cache, whose `hf/`
# folder loses its least recently used files past SPECBOARD_MODEL_CACHE_BYTES (0: no limit).
# The cache is the models directory by default, so configs may mix local and Hub files.
SPECBOARD_HF_ENDPOINT = env_str(
    "SPECBOARD_HF_ENDPOINT", env_str("HF_ENDPOINT", "https://huggingface.co")
).rstrip("/")
SPECBOARD_HF_TOKEN = env_str("SPECBOARD_HF_TOKEN", env_str("HF_TOKEN", "")) or None
SPECBOARD_MODEL_CACHE_DIR = Path(
    env_str("SPECBOARD_MODEL_CACHE_DIR", str(SPECBOARD_MODELS_DIR))
).resolve()
SPECBOARD_MODEL_CACHE_BYTES = env_int("SPECBOARD_MODEL_CACHE_BYTES", 200 * 2**30)
# The hardware kind of this host's GPU worker: it consumes the queue gpu.<slug>.
SPECBOARD_HARDWARE_SLUG = env_str("SPECBOARD_HARDWARE_SLUG", "local")
# A GPU host's name and the key an admin issued for it (manage.py register_gpu_host): what the
# host sends back is signed with it. The database side refuses unsigned messages unless told not
# to.
SPECBOARD_HOST_NAME = env_str("SPECBOARD_HOST_NAME", "")
SPECBOARD_HOST_KEY = env_str("SPECBOARD_HOST_KEY", "")
SPECBOARD_REQUIRE_HOST_SIGNATURES = env_bool("SPECBOARD_REQUIRE_HOST_SIGNATURES", True)
# Another host of the same kind may claim a running job whose host sent nothing for this long.
SPECBOARD_HOST_RECLAIM_SECONDS = env_int("SPECBOARD_HOST_RECLAIM_SECONDS", 900)
# The llama.cpp release the workers run; jobs and their paired baselines are matched on it.
SPECBOARD_ENGINE_RELEASE = env_str("SPECBOARD_ENGINE_RELEASE", f"b{DEFAULT_RELEASE}")
SPECBOARD_MAX_JOB_SECONDS = env_int("SPECBOARD_MAX_JOB_SECONDS", 6 * 3600)
SPECBOARD_MAX_ATTEMPTS = env_int("SPECBOARD_MAX_ATTEMPTS", 3)
SPECBOARD_SUBMISSION_RATE = env_str("SPECBOARD_SUBMISSION_RATE", "30/hour")
SPECBOARD_IMPORT_RATE = env_str("SPECBOARD_IMPORT_RATE", "20/hour")
# Downloads (a run's exports and API detail, the board's exports) per address for visitors not
# signed in: each can be megabytes (leaderboard.exports keeps them rendered, in the shared cache).
SPECBOARD_ANONYMOUS_EXPORT_RATE = env_str("SPECBOARD_ANONYMOUS_EXPORT_RATE", "30/hour")
# GPU work a user may ask for, counted from the database: tokens one job and one user a day may
# use.
SPECBOARD_MAX_JOB_TOKENS = env_int("SPECBOARD_MAX_JOB_TOKENS", 2_000_000)
SPECBOARD_DAILY_TOKENS = env_int("SPECBOARD_DAILY_TOKENS", 20_000_000)
SPECBOARD_MAX_IMPORT_BYTES = env_int("SPECBOARD_MAX_IMPORT_BYTES", 5 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = SPECBOARD_MAX_IMPORT_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = SPECBOARD_MAX_IMPORT_BYTES
# A JSON request body (a config and its prompt) is small; larger ones are refused with a 413.
SPECBOARD_MAX_JSON_BYTES = 256 * 1024
# Cached pages are kept under the versions of the rankings they show, which the services raise
# with every change (leaderboard.web.page_cache); the timeout only bounds how long an edit made
# outside the services (the admin) can go unseen.
SPECBOARD_BOARD_CACHE_SECONDS = env_int("SPECBOARD_BOARD_CACHE_SECONDS", 300)
# How long a web process trusts the ranking versions it read for a kept page: within it a kept
# page costs no query, and a change made elsewhere shows after it at the latest. 0: read them
# on every request.
SPECBOARD_BOARD_VERSION_SECONDS = env_float("SPECBOARD_BOARD_VERSION_SECONDS", 1.0)
# A kept page found out of date is served as it was while a thread of the process computes it
# again (on): no visitor waits for a page to be computed once it has been. Off: the request
# that finds it computes it.
SPECBOARD_PAGES_REFRESH_BEHIND = env_bool("SPECBOARD_PAGES_REFRESH_BEHIND", True)
# How long a web process trusts what a queued job's estimated start rests on (its hardware's
# typical job duration and running jobs): the place in the queue is always counted afresh.
SPECBOARD_QUEUE_ESTIMATE_SECONDS = env_float("SPECBOARD_QUEUE_ESTIMATE_SECONDS", 1.0)

# How long the hosts page waits for live workers to answer the broker's question (the page
# caches their answer): every worker answers within it, or counts as not answering.
SPECBOARD_BROKER_INSPECT_SECONDS = env_float("SPECBOARD_BROKER_INSPECT_SECONDS", 1.0)

# Celery: Redis when one answers, otherwise kombu's filesystem transport (no server needed).
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or (
    DEFAULT_REDIS_URL if redis_answers(DEFAULT_REDIS_URL) else "filesystem://"
)
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
    # Longer than the longest job, so a job in progress is never handed to a second worker.
    "visibility_timeout": SPECBOARD_MAX_JOB_SECONDS * 2,
    # One Redis list per queue (nothing here sends priorities): a GPU host's broker ACL then
    # names exactly the keys it may touch (leaderboard.messaging.broker.host_acl_rule).
    "priority_steps": [0],
}
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Checks every message against the queue it came from before a worker sees it: a GPU host
    # writes to some of them (leaderboard.messaging.transport).
    CELERY_BROKER_TRANSPORT = "leaderboard.messaging.transport:Transport"
# The largest broker message the transport delivers (a host's result is its biggest, about a
# megabyte for the runs in docs/gpu-results); a larger one is dropped and logged.
SPECBOARD_MAX_BROKER_MESSAGE_BYTES = env_int("SPECBOARD_MAX_BROKER_MESSAGE_BYTES", 32 * 1024 * 1024)
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        data_folder_in=str(BROKER_DIR / "messages"),
        data_folder_out=str(BROKER_DIR / "messages"),
        processed_folder=str(BROKER_DIR / "processed"),
        control_folder=str(BROKER_DIR / "control"),
        store_processed=False,
    )
    for folder in ("messages", "processed", "control"):
        (BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_DEFAULT_QUEUE = "db"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_ALWAYS_EAGER = False

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": ["leaderboard.api.renderers.FiniteJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.api.parsers.LimitedJSONParser",
        "leaderboard.api.parsers.LimitedFormParser",
        "leaderboard.api.parsers.LimitedMultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "leaderboard.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # The throttles read leaderboard.web.client_address (leaderboard.api.throttles). This is no
    # safety net for a throttle built without it: DRF then reads the peer when no proxy is
    # configured, but with proxies it reads X-Forwarded-For from any peer.
    "NUM_PROXIES": SPECBOARD_TRUSTED_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Specboard API",
    "DESCRIPTION": "Submit speculative-decoding benchmark configs and read the leaderboard.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "leaderboard.api.schema.add_config_and_errors",
    ],
}
