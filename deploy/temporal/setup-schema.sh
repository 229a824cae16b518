#!/bin/sh
# Create or upgrade the Temporal server's databases (docker-compose.yml's `temporal-schema`, a one-shot
# service the server waits for). Safe to run on every `docker compose up`: a database already set up
# is only brought to the schema of this admin-tools release.
set -eu

: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
SCHEMA=/etc/temporal/schema/postgresql/v12

sql_tool() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "${DB_PORT:-5432}" "$@"
}

for db in temporal temporal_visibility; do
  case "$db" in
    temporal) dir="$SCHEMA/temporal/versioned" ;;
    *) dir="$SCHEMA/visibility/versioned" ;;
  esac
  # update-schema fails on a database that has no schema yet: that is how a first start is told apart.
  if sql_tool --db "$db" update-schema -d "$dir"; then
    echo "database $db is at the newest schema"
    continue
  fi
  echo "setting up database $db"
  # `create` fails when the database exists (Postgres made `temporal` for POSTGRES_USER=temporal);
  # a real failure shows in setup-schema, which needs the database.
  sql_tool --db "$db" create || echo "database $db already exists"
  sql_tool --db "$db" setup-schema -v 0.0
  sql_tool --db "$db" update-schema -d "$dir"
done
