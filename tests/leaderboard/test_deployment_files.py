"""docker-compose.yml and .env.example agree with what the code reads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from leaderboard import selectors, services
from leaderboard.messaging.workers import argv_for
from leaderboard.settings import database_from_url

REPOSITORY = Path(__file__).resolve().parents[2]
ENV_READ = re.compile(r'(?:os\.environ\.get|env_[a-z]+)\(\s*"([A-Z][A-Z0-9_]+)"')


def variables_read_by_the_code() -> set[str]:
    sources = [*REPOSITORY.glob("leaderboard/**/*.py"), *REPOSITORY.glob("runner/**/*.py")]
    return {name for path in sources for name in ENV_READ.findall(path.read_text())}


def documented_variables() -> set[str]:
    text = (REPOSITORY / ".env.example").read_text()
    return set(re.findall(r"^([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE))


def compose() -> dict:
    return yaml.safe_load((REPOSITORY / "docker-compose.yml").read_text())


def celery_command(service: dict) -> list[str]:
    """What a compose service runs: `python -m leaderboard.messaging.workers ...` resolved to its
    argv."""
    command = service["command"]
    assert command[:3] == ["python", "-m", "leaderboard.messaging.workers"]
    return argv_for(command[3:])[1:]  # without the interpreter


def test_env_example_lists_every_variable_the_code_reads():
    assert variables_read_by_the_code() - documented_variables() == set()


def test_the_gpu_worker_gets_the_broker_and_models_but_no_database_credentials():
    worker = compose()["services"]["worker-gpu"]
    environment = worker["environment"]
    assert environment["SPECBOARD_ROLE"] == "gpu-worker"
    assert environment["SPECBOARD_LLAMA_BACKEND"] == "cuda"
    assert {"CELERY_BROKER_URL", "SPECBOARD_MODELS_DIR"} <= set(environment)
    assert not {"DATABASE_URL", "SECRET_KEY", "POSTGRES_PASSWORD"} & set(environment)
    assert "models:/models:ro" in worker["volumes"]
    assert worker["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"


def test_compose_services_use_variables_the_settings_understand():
    services = compose()["services"]
    assert set(services) == {
        "redis",
        "db",
        "backup",
        "proxy",
        "web",
        "worker-db",
        "beat",
        "worker-gpu",
    }
    assert celery_command(services["beat"])[:5] == ["-m", "celery", "-A", "leaderboard", "beat"]
    assert "--appendonly" in services["redis"]["command"][0]
    web = services["web"]["environment"]
    url = web["DATABASE_URL"].replace(
        "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}", "secret"
    )
    assert database_from_url(url)["HOST"] == "db"
    assert set(web) <= documented_variables()
    assert set(services["worker-gpu"]["environment"]) <= documented_variables()
    worker_db = celery_command(services["worker-db"])
    assert worker_db[worker_db.index("-Q") + 1].split(",") == ["db", "site"]


def test_the_database_is_dumped_on_a_schedule_to_a_folder_of_the_host():
    """The backup service (README "Backups and restore"; tests/system/test_database_backup.py
    restores what its command writes)."""
    services = compose()["services"]
    backup = services["backup"]
    # pg_dump of the server's own major version, started once the server answers.
    assert backup["image"] == services["db"]["image"]
    assert backup["depends_on"]["db"]["condition"] == "service_healthy"
    assert backup["restart"] == "unless-stopped"
    environment = backup["environment"]
    assert (environment["PGHOST"], environment["PGUSER"], environment["PGDATABASE"]) == (
        "db", services["db"]["environment"]["POSTGRES_USER"], "specboard"
    )  # fmt: skip
    # A folder of the host, which `docker compose down -v` does not remove.
    [mount] = backup["volumes"]
    source, target = mount.rsplit(":", 1)
    assert target == "/backups" and source.startswith("${BACKUP_PATH:-./")
    configured = set(re.findall(r"\$\{([A-Z][A-Z0-9_]+)", yaml.safe_dump(backup)))
    assert configured | {"BACKUP_PATH"} <= documented_variables()


def test_the_gpu_image_starts_its_worker_from_the_one_argv_builder():
    assert (
        "exec python -m leaderboard.messaging.workers gpu"
        in (REPOSITORY / "Dockerfile").read_text()
    )
    argv = argv_for(["gpu", "h200-141gb"])
    assert argv[argv.index("-Q") + 1] == "gpu.h200-141gb"
    assert argv[argv.index("--pool") + 1] == "threads"
    assert argv[argv.index("--concurrency") + 1] == "1"
    db = argv_for(["db", "--beat-schedule", "/tmp/schedule"])
    assert db[db.index("--schedule") + 1] == "/tmp/schedule" and "-B" in db
    # A GPU host's broker user may publish nothing (no event, no broadcast); the db worker asks
    # no neighbour anything, since every other worker is a host's.
    assert {"--without-heartbeat", "--without-mingle", "--without-gossip"} <= set(argv)
    assert {"--without-mingle", "--without-gossip"} <= set(db)


def test_a_registered_hosts_gpu_worker_is_named_for_it_and_shows_online_while_idle(
    settings, hardware
):
    host, _key = services.register_gpu_host(name="lab-a", hardware_slug=hardware.slug)
    settings.SPECBOARD_HOST_NAME = ""
    argv = argv_for(["gpu", hardware.slug])
    assert argv[argv.index("--hostname") + 1] == "gpu@%h"  # an unregistered machine
    settings.SPECBOARD_HOST_NAME = host.name
    argv = argv_for(["gpu", hardware.slug])
    name = argv[argv.index("--hostname") + 1]
    assert name == "gpu@lab-a"
    # That worker answering on the broker makes its idle host online on /hosts/.
    board = selectors.host_board(workers={name: [hardware.queue_name]}, broker_counts=False)
    (row,) = board["hardware"][0]["hosts"]
    assert row["status"] == "online" and row["running_job"] is None
    board = selectors.host_board(
        workers={"gpu@gpu-box-7.example": [hardware.queue_name]}, broker_counts=False
    )
    assert board["hardware"][0]["hosts"][0]["status"] == "unknown"


def test_the_lock_pins_every_dependency_with_its_hashes():
    lock = (REPOSITORY / "requirements.lock").read_text()
    entries = re.findall(
        r"^([A-Za-z0-9_.-]+)==(\S+)((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})+)", lock, re.M
    )
    pinned = {name.lower().replace("_", "-") for name, _, _ in entries}
    assert len(entries) == len(re.findall(r"^[A-Za-z0-9_.-]+==", lock, re.M)) > 50
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [
        requirement
        for extra in ("service", "dev", "gpu")
        for requirement in project["optional-dependencies"][extra]
    ]
    names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("_", "-") for r in wanted}
    assert names - pinned == set()


def test_setup_and_the_images_install_from_the_lock_with_hashes():
    for path in ("specboard", "Dockerfile"):
        text = (REPOSITORY / path).read_text()
        assert "--require-hashes --no-deps -r requirements.lock" in text, path


def test_the_web_server_runs_gunicorns_threaded_workers_from_the_project_configuration():
    command = " ".join(compose()["services"]["web"]["command"])
    assert "gunicorn leaderboard.wsgi -c python:leaderboard.web.gunicorn_conf" in command
    dockerfile = (REPOSITORY / "Dockerfile").read_text()
    assert (
        '"gunicorn", "leaderboard.wsgi", "-c", "python:leaderboard.web.gunicorn_conf"' in dockerfile
    )
    from leaderboard.web import gunicorn_conf

    assert gunicorn_conf.worker_class == "gthread"
    assert gunicorn_conf.wsgi_app == "leaderboard.wsgi:application"
    # On TCP a listening socket per process, so the kernel spreads connections over them.
    assert gunicorn_conf.reuse_port is (not gunicorn_conf.bind.startswith("unix:"))


def test_the_proxy_publishes_the_site_and_reaches_the_web_server_on_a_unix_socket():
    # Idle and slow clients wait in nginx (tests/system/test_web_server.py starts the same file);
    # the web server listens only on the socket the proxy shares, and counts the proxy's entry.
    services = compose()["services"]
    proxy, web = services["proxy"], services["web"]
    assert "ports" not in web and proxy["ports"] == ["${WEB_PUBLISH:-127.0.0.1:8000}:8000"]
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]
    assert web["environment"]["SPECBOARD_BIND"] == "unix:/run/specboard/web.sock"
    assert web["environment"]["SPECBOARD_TRUSTED_PROXIES"].endswith(":-1}")
    shared = {volume.split(":")[0] for volume in proxy["volumes"]} & {
        volume.split(":")[0] for volume in web["volumes"]
    }
    assert shared == {"web-socket"}
    assert "server unix:/run/specboard/web.sock;" in (REPOSITORY / "deploy/nginx.conf").read_text()
