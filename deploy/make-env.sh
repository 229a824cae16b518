#!/bin/sh
# Print a .env for docker-compose.yml with fresh random passwords: sh deploy/make-env.sh > .env
set -eu
secret() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
echo "TEMPORAL_DB_PASSWORD=$(secret)"
echo "ADK_DB_PASSWORD=$(secret)"
