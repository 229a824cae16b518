#!/bin/sh
# After the Temporal server answers: make sure the namespace exists and has the ADK search attributes
# (docker-compose.yml's `temporal-init`, a one-shot service the worker waits for). Idempotent, and
# run by tests/integration/test_compose_init.py against a dev server.
#   TEMPORAL_ADDRESS  the server (host:port)     NAMESPACE  the namespace (default: default)
set -eu

: "${TEMPORAL_ADDRESS:?}"
NAMESPACE="${NAMESPACE:-default}"
TRIES="${TRIES:-60}"   # one a second: the server's first start (schema cache, namespaces) takes a while

retry() {
  # Run "$@" until it succeeds, at most $TRIES times.
  n=0
  until "$@" >/dev/null 2>&1; do
    n=$((n + 1))
    if [ "$n" -ge "$TRIES" ]; then
      echo "gave up after $TRIES tries: $*" >&2
      "$@"
      exit 1
    fi
    sleep 1
  done
}

retry temporal operator cluster health
if ! temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1; then
  temporal operator namespace create --namespace "$NAMESPACE" --retention 72h
fi
retry temporal operator namespace describe --namespace "$NAMESPACE"

# The AdkApp / AdkUser search attributes that AdkClient starts workflows with (adkt/search_attributes.py).
# The operator API learns of a new namespace a moment after the workflow API does.
retry temporal operator search-attribute list --namespace "$NAMESPACE"
registered=$(temporal operator search-attribute list --namespace "$NAMESPACE")
for name in AdkApp AdkUser; do
  if ! echo "$registered" | grep -qw "$name"; then
    temporal operator search-attribute create --namespace "$NAMESPACE" --name "$name" --type Keyword
  fi
done
# Usable once a query naming them is accepted (the frontend learns of new attributes from a cache).
retry temporal workflow list --namespace "$NAMESPACE" --limit 1 --query "AdkApp='' AND AdkUser=''"
echo "namespace $NAMESPACE is ready, with search attributes AdkApp and AdkUser"
