# A production worker: the runtime dependencies only (no `dev`/`test` extras: no embedded Temporal
# or Postgres binaries). Runs migrations, then serves $ADK_APP until SIGTERM.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

COPY pyproject.toml README.md* ./
COPY adk_core ./adk_core
COPY workflows ./workflows
COPY activities ./activities
COPY adkt ./adkt
COPY worker.py ./
RUN pip install . && rm -rf build *.egg-info

# Apps are imported as module:attr relative to /app (adkt puts the working directory on sys.path).
COPY examples ./examples

RUN useradd --system --uid 10001 --home-dir /app adk
USER adk

ENV ADK_APP=examples.w1:app
# exec replaces the shell, so `docker stop` (SIGTERM) reaches the worker, which drains and exits.
CMD ["sh", "-c", "adkt migrate && exec adkt worker --app \"$ADK_APP\""]
