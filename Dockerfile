# A production worker image: the runtime dependencies only (no `dev`/`test` extras: no embedded
# Temporal or Postgres binaries). Serves the App named by ADK_APP (`module:attr`), imported from
# /app: mount your project there (docker-compose.yml does), or build it in:
#
#   FROM adk-temporal-worker:local
#   COPY . /app
#
# Migrations are a separate one-shot step (`adkt migrate`; docker-compose.yml's `migrate` service).
# See docs/deploy.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /build
COPY pyproject.toml README.md* ./
COPY adk_core ./adk_core
COPY workflows ./workflows
COPY activities ./activities
COPY adk_temporal ./adk_temporal
COPY adkt ./adkt
# [tracing]: the OTLP exporter, so ADK_TRACING=1 exports traces from the image (docs/observability.md).
RUN pip install ".[tracing]" && cd / && rm -rf /build

# Apps are imported as module:attr relative to the working directory (adkt puts it on sys.path).
WORKDIR /app
RUN useradd --system --uid 10001 --home-dir /app adk
USER adk

# exec replaces the shell, so `docker stop` (SIGTERM) reaches the worker, which drains and exits.
CMD ["sh", "-c", "exec adkt worker --app \"${ADK_APP:?set ADK_APP to the module:attr of your App, e.g. ADK_APP=agent:app (docs/deploy.md)}\""]
